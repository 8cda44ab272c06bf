"""A replica's turn that is no longer its own does nothing outside (`bot.replicas.queue`), on a
real PostgreSQL (skipped without `MNEMO_TEST_PG`): a model call looks first that the turn's
entry is still the worker's that took it, and a replica that stops keeps beating for the turns
it gives their grace, so no sweep gives them to another replica while they finish."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.llm.openai_chat import OpenAIChat
from bot.models import ChatMessage, Inbound
from bot.replicas.database import migrate, open_pool
from bot.replicas.journal import PgJournal
from bot.replicas.queue import ChatQueue
from bot.settings import StoreSettings
from bot.storage.inbox import Fenced, looking_first
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot
from tests.pg import given_away
from tests.test_replicas_queue import rows


async def test_a_turn_given_away_asks_the_model_nothing(
    pg_url: str, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("the successor's answer"))
    pool = open_pool(pg_url)
    await pool.open()
    chat = OpenAIChat(
        base_url=fake_openai.base_url, api_key="sk-test", model="m", max_retries=0, timeout=10.0
    )
    try:
        await migrate(pool)
        journal = PgJournal(pool)
        await journal.accept(Inbound("u1", "telegram", 1, 1, "hello", datetime.now(UTC)))
        stale = await journal.take("u1")  # a worker took it, then froze past its lease
        await given_away(pool, "u1")  # the sweep gave it away …
        successor = await journal.take("u1")  # … another worker took it
        assert stale is not None and successor is not None
        asked = [ChatMessage(role="user", content="hello")]

        with looking_first(lambda: journal.holds("u1", stale.fence)), pytest.raises(Fenced):
            await chat.complete(asked)  # the stale worker wakes and would ask the model
        assert fake_openai.requests == []

        with looking_first(lambda: journal.holds("u1", successor.fence)):
            answer = await chat.complete(asked)
        assert answer.content == "the successor's answer"
        assert len(fake_openai.requests) == 1
    finally:
        await chat.close()
        await pool.close()


@contextlib.asynccontextmanager
async def sweeping(url: str) -> AsyncIterator[list[int]]:
    """Another replica's sweep, every 0.1 s while the block runs: how many jobs each put back."""
    pool = open_pool(url)
    await pool.open()
    await migrate(pool)
    queue = ChatQueue(pool, heartbeat=0.2, stalled_after=1.0)
    await queue.open()
    swept: list[int] = []

    async def sweep() -> None:
        while True:
            swept.append(await queue.sweep())
            await asyncio.sleep(0.1)

    task = asyncio.create_task(sweep())
    try:
        yield swept
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await pool.close()


async def test_a_stopping_replica_keeps_beating_for_the_turn_it_lets_finish(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    fake_openai.script(Reply("the answer", delay=2.5))  # outlasts `stalled_after` in the stop
    store = StoreSettings(url=SecretStr(pg_url), heartbeat=0.2, stalled_after=1.0)
    settings = make_settings(
        tmp_path / "ws", telegram=fake_telegram, openai=fake_openai, store=store
    )
    settings = settings.model_copy(
        update={"telegram": settings.telegram.model_copy(update={"shutdown_grace": 5.0})}
    )
    async with sweeping(pg_url) as swept, running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "a question")
        await fake_openai.wait_for_requests(1)
        # then the bot stops: the turn finishes in its grace, 2.5 s, while the sweep looks

    assert [m.text for m in fake_telegram.sent_messages(OWNER)] == ["the answer"]
    assert swept and sum(swept) == 0  # never put back while it ran in the stop's grace
    assert await rows(pg_url, "SELECT count(done_at) FROM mnemo_inbox") == [(1,)]
    assert await rows(pg_url, "SELECT count(*) FROM procrastinate_jobs") == [(0,)]
