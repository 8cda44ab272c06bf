"""Feedback on slow commands (/new, /compact, /forget): typing from the start, a word on what is
being done once it takes a while (`bot.turn.progress`), and an answer that says what was done."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bot.app import App
from bot.turn.progress import NOTICE_AFTER
from tests.fakes.openai_api import FakeOpenAI, Hang, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot
from tests.talk import RecordingReplier, message, say

CONSOLIDATION = json.dumps({"history_entry": "[2026-11-21 09:30] Ann said hi."})
SLOW_MODEL = NOTICE_AFTER + 1.0  # seconds the model takes in the slow tests


async def test_slow_commands_show_typing_and_quick_ones_do_not(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("hello"), Reply(CONSOLIDATION))
    await say(app, "hi")
    seen = {}
    for text in ("/status", "/help", "/forget green tea", "/compact", "/new"):
        replier = RecordingReplier()
        await app.router.handle(message(text, at=app.now()), replier)
        seen[text] = (replier.typing_entries, len(replier.sent))

    assert seen == {
        "/status": (0, 1),
        "/help": (0, 1),
        "/forget green tea": (1, 1),  # done in time: the answer alone
        "/compact": (1, 1),
        "/new": (1, 1),
    }


async def test_a_slow_new_says_what_it_is_doing_then_what_it_did(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("hello"), Hang(then=Reply(CONSOLIDATION)))
    await say(app, "hi")
    replier = RecordingReplier()

    new = asyncio.create_task(app.router.handle(message("/new", at=app.now()), replier))
    await fake_openai.wait_until_hanging()
    await asyncio.sleep(NOTICE_AFTER + 0.5)
    while_working = list(replier.sent)
    fake_openai.release()
    await asyncio.wait_for(new, timeout=10)

    assert while_working == [
        "Saving this conversation (2 messages) to memory, then starting a new one…"
    ]
    assert replier.sent == [
        *while_working,
        "Started a new conversation. I saved what mattered from the last one (2 messages) to "
        "memory.",
    ]
    assert replier.typing_entries == 1


async def test_over_telegram_typing_and_a_notice_come_before_the_slow_compacts_answer(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("one"), Reply("two"), Reply("they said hi twice", delay=SLOW_MODEL))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        for n, text in enumerate(("hi", "hi again"), start=1):
            fake_telegram.push_text(OWNER, OWNER, text)
            await fake_telegram.wait_for_messages(OWNER, n)
        typing_before = len(fake_telegram.calls_to("sendChatAction"))
        calls_before = len(fake_telegram.calls)

        fake_telegram.push_text(OWNER, OWNER, "/compact 2")

        await fake_telegram.wait_for_call("sendChatAction", count=typing_before + 1, timeout=1.0)
        replies = await fake_telegram.wait_for_messages(OWNER, 4, timeout=SLOW_MODEL + 5)
    notice, answer = (r.text for r in replies[2:])
    assert notice == "Summarising 2 older messages…"
    assert answer.startswith("Compacted: 4 → 3 messages")
    said = [
        "typing" if c.method == "sendChatAction" else c.params["text"]
        for c in fake_telegram.calls[calls_before:]
        if c.method in ("sendChatAction", "sendMessage")
    ]
    assert said[0] == "typing"
    assert [s for s in said if s != "typing"] == [notice, answer]
    assert said[-1] == answer  # typing stopped with the answer
