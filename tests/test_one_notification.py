"""One notification per answer in a group: a quick answer is one message (no preview sent and
deleted first); a long one is one message too, sent as a preview that grows into the answer,
which notifies when it is first sent (an edit never notifies)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.settings import Settings
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot

GROUP = -100778
LONG = " ".join(f"Sentence number {i} of a long answer." for i in range(40))


def group_settings(workspace: Path, telegram: FakeTelegram, openai: FakeOpenAI) -> Settings:
    """Typing shown every 4 s, as in production: a group's 20 requests a minute go to texts."""
    settings = make_settings(workspace, telegram=telegram, openai=openai)
    typing = settings.telegram.model_copy(update={"typing_interval": 4.0})
    return settings.model_copy(update={"telegram": typing})


def notifying(telegram: FakeTelegram, chat: int) -> list[str]:
    """The texts of the messages sent to `chat` that notify its members."""
    return [
        str(call.params["text"])
        for call in telegram.calls_to("sendMessage")
        if not call.failed
        and int(call.params["chat_id"]) == chat
        and str(call.params.get("disable_notification", "")).lower() not in ("true", "1")
    ]


async def test_a_quick_group_answer_is_sent_once_and_never_deleted(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Quick answer.", pieces=3, chunk_delay=0.02))
    settings = group_settings(tmp_path / "ws", fake_telegram, fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(GROUP, OWNER, "@mnemo_test_bot quick?", chat_type="group")
        await fake_telegram.wait_for_messages(GROUP, 1)
        await asyncio.sleep(0.5)

    assert [m.text for m in fake_telegram.sent_messages(GROUP)] == ["Quick answer."]
    assert not fake_telegram.calls_to("deleteMessage")


async def test_a_long_group_answer_notifies_once(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(LONG, pieces=20, chunk_delay=0.25))  # 5 s of text
    settings = group_settings(tmp_path / "ws", fake_telegram, fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(GROUP, OWNER, "@mnemo_test_bot tell me a lot", chat_type="group")
        await fake_telegram.wait_for_text(GROUP, LONG, timeout=20)
        await asyncio.sleep(0.5)

    [answer] = fake_telegram.sent_messages(GROUP)  # the preview, grown into the answer
    assert not answer.deleted and answer.text == LONG and answer.edit_count >= 1
    [notified] = notifying(fake_telegram, GROUP)
    assert LONG.startswith(notified) and len(notified) < len(LONG)
    assert not fake_telegram.calls_to("deleteMessage")
