"""An owner-side failure of a paired user's turn (a rejected key) is told to the owner in
their private chat, once per cause per hour; the user hears the short line."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.llm import failures
from tests.fakes.openai_api import PROVIDER_FAILURES, FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import FRIEND, OWNER, make_settings, running_bot


async def test_a_rejected_key_in_a_friends_turn_is_told_to_the_owner_once(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    rejected = PROVIDER_FAILURES["invalid-key"]
    fake_openai.script(rejected, rejected, Reply("Fine again."))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(FRIEND, FRIEND, "hello", first_name="Bob")
        [told] = await fake_telegram.wait_for_messages(FRIEND, 1)
        [alert] = await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(FRIEND, FRIEND, "hello again", first_name="Bob")
        await fake_telegram.wait_for_messages(FRIEND, 2)
        fake_telegram.push_text(OWNER, OWNER, "and me?")
        await fake_telegram.wait_for_messages(OWNER, 2)
        await asyncio.sleep(0.3)

    assert told.text == failures.OWNER_NEEDED
    assert alert.text.startswith("A message from Bob could not be answered. ")
    assert "rejected the API key" in alert.text and "BOT_LLM__API_KEY" in alert.text
    assert [m.text for m in fake_telegram.sent_messages(OWNER)] == [alert.text, "Fine again."]
