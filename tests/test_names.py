"""How the bot names a person to people: their name with the username beside it ("Bob Stone
(@bobby)"), never the bare username — in an owner's alert, in /memory's provenance and in a
pairing request — also for a message answered after a restart (the journal keeps the name)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_api import PROVIDER_FAILURES, FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import FRIEND, OWNER, make_settings, running_bot


async def test_an_owner_alert_names_the_person_not_their_username(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(PROVIDER_FAILURES["invalid-key"])
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(FRIEND, FRIEND, "hello", first_name="Bob Stone", username="bobby")
        [alert] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert alert.text.startswith("A message from Bob Stone (@bobby) could not be answered. ")


async def test_memory_says_who_said_a_fact_by_name(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        for text in ("/remember The boiler code is 5521", "/memory"):
            fake_telegram.push_text(OWNER, OWNER, text, first_name="Ann", username="annie")
        _, shown = await fake_telegram.wait_for_messages(OWNER, 2)

    assert "The boiler code is 5521  (Ann (@annie, 1001), said, telegram:1001, " in shown.text
    assert "annie (1001)" not in shown.text
