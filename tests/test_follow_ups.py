"""Quick follow-ups in one chat, arriving before its turn starts, are answered together: one
turn, one answer, every message in it once, its daily note line holding every message's words,
and the journal empty after."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.storage.inbox import Inbox
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import FRIEND, OWNER, make_settings, running_bot
from tests.talk import conversation, message

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def last_said(request: dict[str, Any]) -> str:
    return str(conversation(request)[-1]["content"])


def as_a_stop_left(folder: Path, inbound_id: str, text: str, absorbed: str) -> Path:
    """The entry `inbound_id` rewritten as `Inbox.merged` writes it, its removals not done."""
    [path] = [p for p in journaled(folder) if inbound_id in p.read_text()]
    document = json.loads(path.read_text())
    document.update(text=text, absorbed=[absorbed])
    path.write_text(json.dumps(document))
    return path


def journaled(folder: Path) -> list[Path]:
    return list(folder.glob("*.json"))


async def test_three_quick_messages_get_one_answer(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.answer_all(
        lambda request: Reply("Hello friend." if last_said(request) == "hi" else "It is noon.")
    )
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    debounced = settings.telegram.model_copy(update={"debounce": 0.5})  # the default
    settings = settings.model_copy(update={"telegram": debounced})
    async with running_bot(settings, fake_telegram):
        for text in ("wait", "actually", "what time is it?"):
            fake_telegram.push_text(OWNER, OWNER, text)
        fake_telegram.push_text(FRIEND, FRIEND, "hi")
        [answer] = await fake_telegram.wait_for_messages(OWNER, 1)
        await fake_telegram.wait_for_messages(FRIEND, 1)
        await asyncio.sleep(0.5)

    assert answer.text == "It is noon."
    assert len(fake_telegram.sent_messages(OWNER)) == 1
    asked = [last_said(request) for request in fake_openai.requests]
    assert sorted(asked) == ["hi", "wait\nactually\nwhat time is it?"]
    assert not list((tmp_path / "ws" / "state" / "inbox").glob("*.json"))


async def test_the_daily_note_keeps_every_follow_ups_words(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    said = [
        f"{word} " + "about the shed roof and the tar paper it needs " * 3
        for word in ("first", "second", "third", "fourth", "fifth")
    ]  # each ~150 characters: together far more than one note line's 200
    fake_openai.answer_all(lambda request: Reply("Noted, all five."))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    debounced = settings.telegram.model_copy(update={"debounce": 0.5})  # the default
    settings = settings.model_copy(update={"telegram": debounced})
    async with running_bot(settings, fake_telegram):
        for text in said:
            fake_telegram.push_text(OWNER, OWNER, text)
        [answer] = await fake_telegram.wait_for_messages(OWNER, 1)
        await asyncio.sleep(0.3)

    assert answer.text == "Noted, all five."
    [line] = [
        line
        for note in (tmp_path / "ws" / "memory").glob("????-??-??.md")
        for line in note.read_text().splitlines()
        if "User:" in line
    ]
    for text in said:
        assert " ".join(text.split()) in line
    assert line.endswith("| Assistant: Noted, all five.")


async def test_merged_messages_are_journaled_as_one(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path)
    try:
        entries = await inbox.accept_all([message("wait", at=NOW), message("now?", at=NOW)])
        joined = replace(entries[1].inbound, text="wait\nnow?")
        merged = await inbox.merged(entries, joined)
        left = await inbox.pending()
    finally:
        inbox.close()
    assert left == [merged]
    assert left[0].inbound.text == "wait\nnow?"
    assert left[0].absorbed == (entries[0].inbound.id,)


async def test_a_stop_while_merging_leaves_each_message_once(tmp_path: Path) -> None:
    """A stop after the joined entry was written, before the others were removed."""
    inbox = Inbox(tmp_path)
    try:
        first, second = await inbox.accept_all([message("wait", at=NOW), message("now?", at=NOW)])
        written = as_a_stop_left(tmp_path, second.inbound.id, "wait\nnow?", first.inbound.id)

        [left] = await inbox.pending()
    finally:
        inbox.close()
    assert left.inbound.text == "wait\nnow?"
    assert journaled(tmp_path) == [written]
