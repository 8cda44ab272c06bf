"""`python -m bot doctor` in replicated mode (skipped without `MNEMO_TEST_PG`): the database line
says what it found and catches replicas started with different webhook secrets (each records a
digest of its own); the webhook line says where Telegram posts, what waits there, and its last
failed delivery."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.replicas.database import migrate, open_pool, record_replica, secret_digest
from bot.settings import Settings, StoreSettings
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.test_doctor import KEY, run_doctor, settings_for

SECRET = "the-one-secret-0123456789"
HOOK = "http://127.0.0.1:9/telegram"  # nothing listens: deliveries there fail


@pytest.fixture
async def strict_openai() -> AsyncIterator[FakeOpenAI]:
    """A model server that wants `KEY` and answers every request "OK" (as `tests.test_doctor`)."""
    async with FakeOpenAI(api_key=KEY) as fake:
        fake.answer_all(lambda request: Reply("OK"))
        yield fake


def replicated(workspace: Path, telegram: FakeTelegram, openai: FakeOpenAI, url: str) -> Settings:
    settings = settings_for(
        workspace,
        telegram,
        openai,
        telegram={"mode": "webhook", "webhook_url": HOOK, "webhook_secret": SecretStr(SECRET)},
    )
    return settings.model_copy(update={"store": StoreSettings(url=SecretStr(url))})


async def started(url: str, *replicas: tuple[str, str]) -> None:
    """Replicas that started on the database at `url`, each with its secret."""
    pool = open_pool(url)
    await pool.open()
    try:
        await migrate(pool)
        for name, secret in replicas:
            await record_replica(pool, name, secret)
    finally:
        await pool.close()


async def test_doctor_catches_a_replica_with_another_webhook_secret(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    pg_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = replicated(workspace, fake_telegram, strict_openai, pg_url)
    await started(pg_url, ("host-a:8080", SECRET), ("host-b:8080", SECRET))
    agreed = await run_doctor(settings, capsys)
    await started(pg_url, ("host-c:8080", "typed-on-host-c"))
    differing = await run_doctor(settings, capsys)

    assert agreed["database"].startswith("ok    database: PostgreSQL ")
    assert agreed["database"].endswith("(tables there; 2 replicas recorded, one secret)")
    assert differing["exit"] == "1"
    assert differing["database"].startswith(
        "FAIL  database: the replicas do not share one webhook secret: host-c:8080 started with"
    )
    assert SECRET not in differing["database"] and "typed-on-host-c" not in differing["database"]
    assert secret_digest(SECRET) not in differing["database"]


async def test_doctor_reads_the_webhook_telegram_holds(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    pg_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = replicated(workspace, fake_telegram, strict_openai, pg_url)
    fake_telegram.push_text(1001, 1001, "waiting")
    unset = await run_doctor(settings, capsys)
    fake_telegram.webhook.register(HOOK, SECRET, 40)
    await fake_telegram.webhook.wait_until(lambda: bool(fake_telegram.webhook.attempts))
    failing = await run_doctor(settings, capsys)

    assert unset["webhook"] == (
        "warn  webhook: no webhook set yet (1 update waiting): a replica sets it when it starts"
    )
    assert failing["webhook"] == (
        f"warn  webhook: Telegram posts to {HOOK} (1 update waiting); its last delivery failed"
        ' 0 min ago: "Connection refused"'
    )
