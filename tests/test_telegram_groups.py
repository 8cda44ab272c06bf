"""Telegram end to end, against the fake Bot API and model: a reaction when a turn starts (and
none when turned off or refused), and in a group names, chatter, and replies threaded to the
message that asked."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bot.settings import Settings
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import FRIEND, OWNER, STRANGER, make_settings, running_bot
from tests.talk import system_text

GROUP = -100777
EYES = [{"type": "emoji", "emoji": "👀"}]


def with_reaction(settings: Settings, reaction: str) -> Settings:
    telegram = settings.telegram.model_copy(update={"reaction": reaction})
    return settings.model_copy(update={"telegram": telegram})


def message_id(telegram: FakeTelegram, update_id: int) -> int:
    [update] = [u for u in telegram.pushed_updates if u["update_id"] == update_id]
    found: int = update["message"]["message_id"]
    return found


def in_group(telegram: FakeTelegram, user: int, name: str, text: str) -> int:
    """A message in the group; its message id."""
    update = telegram.push_text(GROUP, user, text, chat_type="group", first_name=name)
    return message_id(telegram, update)


async def test_a_turn_starts_with_a_reaction_that_goes_once_the_answer_is_sent(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hello!"))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        asked = message_id(fake_telegram, fake_telegram.push_text(OWNER, OWNER, "hi"))
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(OWNER, OWNER, "/status")
        await fake_telegram.wait_for_messages(OWNER, 2)

    set_, removed = fake_telegram.calls_to("setMessageReaction")  # none for /status
    assert set_.params["message_id"] == removed.params["message_id"] == asked
    assert "👀" in str(set_.params["reaction"]) and not removed.params.get("reaction")
    assert fake_telegram.reactions(OWNER, asked) == []  # gone once "Hello!" was sent


async def test_no_reaction_when_it_is_turned_off(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hello!"))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(with_reaction(settings, ""), fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "hi")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == "Hello!"
    assert fake_telegram.calls_to("setMessageReaction") == []


async def test_a_reaction_telegram_refuses_costs_nothing(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hello!"))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(with_reaction(settings, "🦖"), fake_telegram):  # not a reaction
        fake_telegram.push_text(OWNER, OWNER, "hi")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == "Hello!"
    [refused] = fake_telegram.calls_to("setMessageReaction")
    assert refused.failed and refused.description == "Bad Request: REACTION_INVALID"


async def test_in_a_group_the_model_sees_names_and_chatter_and_the_reply_is_threaded(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Noon, Bob brings pizza."))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        chatter = in_group(fake_telegram, OWNER, "Ann", "lunch at noon?")
        in_group(fake_telegram, FRIEND, "Bob", "I'll bring pizza")
        in_group(fake_telegram, STRANGER, "Eve", "hello everyone")
        asked = in_group(fake_telegram, OWNER, "Ann", "@mnemo_test_bot what's the plan?")
        [reply] = await fake_telegram.wait_for_messages(GROUP, 1)

    assert reply.text == "Noon, Bob brings pizza."
    assert reply.reply_to_message_id == asked
    [request] = fake_openai.requests
    assert request["messages"][-1] == {"role": "user", "content": "Ann: what's the plan?"}
    context = system_text(request)
    assert "\nAnn: lunch at noon?\nBob: I'll bring pizza\n" in context
    assert "hello everyone" not in context  # a stranger's chatter is never kept
    assert fake_telegram.reactions(GROUP, asked) == []  # set, and taken away with the answer
    assert len(fake_telegram.calls_to("setMessageReaction")) == 2
    assert fake_telegram.reactions(GROUP, chatter) == []
    assert fake_telegram.sent_messages(STRANGER) == []  # and the door said nothing


async def test_only_the_first_part_of_a_long_group_reply_is_threaded(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    long_reply = " ".join(f"word{i:05d}" for i in range(1000))
    fake_openai.script(Reply(long_reply))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        asked = in_group(fake_telegram, OWNER, "Ann", "@mnemo_test_bot write a lot")
        await fake_telegram.wait_for_messages(GROUP, 3)
        for _ in range(200):  # the preview shown while it was written is gone before the reply
            parts = [m for m in fake_telegram.sent_messages(GROUP) if not m.deleted]
            if len(parts) == 3:
                break
            await asyncio.sleep(0.05)

    assert [part.reply_to_message_id for part in parts] == [asked, None, None]


async def test_a_private_reply_is_not_threaded(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hello!"))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "hi")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.reply_to_message_id is None
    sent: dict[str, Any] = fake_telegram.calls_to("sendMessage")[0].params
    assert "reply_parameters" not in sent
