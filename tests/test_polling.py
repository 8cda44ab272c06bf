"""Polling that stays alive: a poll Telegram refuses once is tried again (the bot goes on
answering), an outage is one warning and one line when it is over, and a token Telegram keeps
rejecting ends the run with a `StartupError` (a supervisor restarts the process)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.app import build_app
from bot.channels.telegram import TelegramChannel, telegram_bot
from bot.errors import StartupError
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import API_KEY, OWNER, make_settings, running_bot


async def refused_polls(telegram: FakeTelegram, count: int) -> None:
    """Wait until `count` polls were answered with an error (the long poll waiting when the
    failure was set up ends first, after the fake's poll timeout)."""
    for _ in range(200):
        if sum(1 for c in telegram.calls_to("getUpdates") if c.error_code) >= count:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"fewer than {count} refused polls")


@pytest.mark.parametrize(("code", "description"), [(401, "Unauthorized"), (404, "Not Found")])
async def test_one_refused_poll_does_not_stop_the_bot_listening(
    tmp_path: Path,
    fake_telegram: FakeTelegram,
    fake_openai: FakeOpenAI,
    code: int,
    description: str,
) -> None:
    fake_openai.script(Reply("still here"))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.fail_next("getUpdates", error_code=code, description=description)
        await refused_polls(fake_telegram, 1)
        fake_telegram.push_text(OWNER, OWNER, "are you there?")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1, timeout=15)
    assert reply.text == "still here"
    refused = [c for c in fake_telegram.calls_to("getUpdates") if c.error_code == code]
    assert len(refused) == 1


async def test_an_outage_is_one_warning_and_one_line_when_it_is_over(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("back again"))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        with capture_logs() as logs:
            fake_telegram.fail_next(
                "getUpdates", error_code=502, description="Bad Gateway", times=3
            )
            await refused_polls(fake_telegram, 3)
            fake_telegram.push_text(OWNER, OWNER, "hello")
            await fake_telegram.wait_for_messages(OWNER, 1, timeout=20)
    events = [(line["log_level"], line["event"]) for line in logs]
    loud = [event for event in events if event[0] in ("warning", "error", "critical")]
    assert loud == [("warning", "telegram_unreachable")]
    assert ("info", "telegram_reachable_again") in events
    assert not any("exc_info" in line for line in logs)


async def test_a_token_rejected_for_good_ends_the_run_with_one_line(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    app = build_app(settings, api_key=API_KEY)
    bot = telegram_bot(fake_telegram.token, base_url=fake_telegram.base_url)
    channel = TelegramChannel(bot, app.router)
    offset = app.workspace.channel_state_path("telegram")
    await app.start()
    try:
        fake_telegram.fail_next("getUpdates", error_code=401, description="Unauthorized", times=99)
        with pytest.raises(StartupError) as raised:
            await asyncio.wait_for(
                channel.run_polling(asyncio.Event(), offset_path=offset, poll_timeout=1), timeout=30
            )
    finally:
        await app.aclose()
    assert str(raised.value).startswith("Telegram rejected the bot token")
    assert fake_telegram.token not in str(raised.value)
