"""Who gets into the memory page, without a browser: a link works once and only within its
minutes, a session until it expires or is ended, neither kept readable at rest; `python -m bot
web link` writes a link the running bot redeems; the page stays on loopback unless a setting
says where it is served, and is refused with the replicas' store."""

from __future__ import annotations

import socket
from argparse import Namespace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from bot.cli import web as cli_web
from bot.errors import StartupError
from bot.settings import Settings, StoreSettings, TelegramSettings, WebSettings
from bot.storage.files import FileLocks
from bot.turn.access import AccessPolicy
from bot.web.server import WebServer
from bot.web.signin import SignIns, Visitor, csrf_token
from tests.clock import Clock
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, STRANGER, bot_env, quiet_env, run_bot_command

ANN = Visitor(42, "telegram:42")


def signins(tmp_path: Path, clock: Clock) -> SignIns:
    return SignIns(
        tmp_path / "state" / "web.json",
        FileLocks(tmp_path / "locks"),
        now=clock,
        link_minutes=10,
        session_hours=12,
    )


async def test_a_link_starts_one_session_and_then_is_gone(tmp_path: Path) -> None:
    clock = Clock(datetime(2026, 11, 27, 9, 0, tzinfo=UTC))
    store = signins(tmp_path, clock)
    token = await store.link(ANN)

    started = await store.redeem(token)
    again = await store.redeem(token)

    assert started is not None and started.visitor == ANN
    assert again is None
    assert await store.visitor(started.session) == ANN


async def test_a_link_past_its_minutes_and_a_session_past_its_hours_are_refused(
    tmp_path: Path,
) -> None:
    clock = Clock(datetime(2026, 11, 27, 9, 0, tzinfo=UTC))
    store = signins(tmp_path, clock)
    late = await store.link(ANN)
    session = await store.redeem(await store.link(ANN))
    assert session is not None

    clock.at += timedelta(minutes=11)
    assert await store.redeem(late) is None
    assert await store.visitor(session.session) == ANN
    clock.at += timedelta(hours=12)
    assert await store.visitor(session.session) is None


async def test_signing_out_ends_the_session(tmp_path: Path) -> None:
    store = signins(tmp_path, Clock(datetime(2026, 11, 27, 9, 0, tzinfo=UTC)))
    session = await store.redeem(await store.link(ANN))
    assert session is not None

    await store.end(session.session)

    assert await store.visitor(session.session) is None


async def test_neither_link_nor_session_is_readable_at_rest(tmp_path: Path) -> None:
    store = signins(tmp_path, Clock(datetime(2026, 11, 27, 9, 0, tzinfo=UTC)))
    token = await store.link(ANN)
    other = await store.link(ANN)
    session = await store.redeem(token)
    assert session is not None

    kept = (tmp_path / "state" / "web.json").read_text()

    assert token not in kept and other not in kept and session.session not in kept
    assert csrf_token(session.session) not in kept
    assert csrf_token(session.session) != csrf_token(session.session[::-1])


async def test_a_shell_s_link_is_the_first_owner_s_and_redeems_once(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    env = quiet_env(bot_env(workspace, fake_telegram, fake_openai)) | {"BOT_WEB__ENABLED": "1"}

    code, said = await run_bot_command(env, tmp_path, "web", "link", within=50)

    assert code == 0, said
    link, note = said.strip().splitlines()
    assert link.startswith("http://127.0.0.1:8765/signin?token=")
    assert f"signs in as telegram:{OWNER}" in note
    store = signins(workspace, Clock(datetime.now(UTC)))
    started = await store.redeem(link.rsplit("=", 1)[1])
    assert started is not None and started.visitor == Visitor(OWNER, f"telegram:{OWNER}")


def test_a_shell_link_for_a_stranger_or_with_the_page_off_is_refused(tmp_path: Path) -> None:
    on = Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=tmp_path,
        telegram=TelegramSettings(owner_ids=(OWNER,)),
        web=WebSettings(enabled=True),
    )
    off = on.model_copy(update={"web": WebSettings()})
    told: list[str] = []

    refused = cli_web.run(on, Namespace(user=STRANGER), out=told.append)
    stopped = cli_web.run(off, Namespace(user=None), out=told.append)

    assert (refused, stopped) == (1, 2)
    assert f"does not let user {STRANGER} in" in told[0]
    assert "the memory page is off" in told[1]
    assert not (tmp_path / "state" / "web.json").exists()


async def test_a_port_in_use_stops_the_start_with_what_to_change(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    store = signins(tmp_path, Clock(datetime(2026, 11, 27, 9, 0, tzinfo=UTC)))
    people = AccessPolicy(owner_ids=(OWNER,), allowed_user_ids=())
    server = WebServer(store, people, host="127.0.0.1", port=port, public_url=None, session_hours=1)
    try:
        with pytest.raises(StartupError, match=f"cannot listen on 127.0.0.1:{port}.*BOT_WEB__PORT"):
            await server.start()
    finally:
        taken.close()


def test_the_page_stays_on_loopback_unless_told_where_it_is_served() -> None:
    with pytest.raises(ValidationError, match="beyond loopback"):
        WebSettings(host="0.0.0.0")
    with pytest.raises(ValidationError, match="public_url"):
        WebSettings(host="0.0.0.0", public_url="http://mnemo.example.org")

    behind = WebSettings(host="0.0.0.0", public_url="https://mnemo.example.org")

    assert WebSettings().host == "127.0.0.1" and not WebSettings().enabled
    assert behind.public_url == "https://mnemo.example.org"


def test_the_page_is_for_the_embedded_mode_only() -> None:
    store = StoreSettings(url=SecretStr("postgresql://mnemo@db/mnemo"))
    with pytest.raises(ValidationError, match="embedded mode only"):
        Settings(_env_file=None, web=WebSettings(enabled=True), store=store)  # type: ignore[call-arg]
