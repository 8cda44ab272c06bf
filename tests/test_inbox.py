"""The inbox journal: accept (once per id), the reply and its parts recorded, done, pending in
arrival order, unreadable entries set aside."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from bot.models import Attachment, Inbound
from bot.storage.inbox import Inbox

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)


def inbound(n: int, chat_id: int = -100500) -> Inbound:
    return Inbound(
        id=f"telegram:update:{n}",
        channel="telegram",
        chat_id=chat_id,
        user_id=7,
        text=f"message {n}",
        received_at=NOW,
        chat_type="supergroup",
        thread_id=3,
        message_id=n,
        user_name="ann",
    )


async def test_pending_returns_unfinished_entries_in_arrival_order(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path)
    for n in (5, 3, 9):
        await inbox.accept(inbound(n))
    await inbox.done("telegram:update:3")
    pending = await inbox.pending()
    assert [e.inbound.id for e in pending] == ["telegram:update:5", "telegram:update:9"]
    assert pending[0].inbound == inbound(5)
    assert (pending[0].reply, pending[0].sent) == (None, 0)


async def test_the_senders_name_is_kept_across_a_restart(tmp_path: Path) -> None:
    named = replace(inbound(6), user_name="bobby", user_display_name="Bob Stone (@bobby)")
    await Inbox(tmp_path).accept(named)

    [entry] = await Inbox(tmp_path).pending()

    assert entry.inbound == named and entry.inbound.person == "Bob Stone (@bobby)"


async def test_group_chatter_stays_chatter_across_a_restart(tmp_path: Path) -> None:
    chatter = replace(inbound(4), addressed=False)
    await Inbox(tmp_path).accept_all([chatter, inbound(5)])

    pending = await Inbox(tmp_path).pending()

    assert [e.inbound for e in pending] == [chatter, inbound(5)]


async def test_an_id_already_journaled_is_not_taken_again(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path)
    first = await inbox.accept_all([inbound(1), inbound(2)])

    again = await inbox.accept_all([inbound(2), inbound(3)])

    assert [e.inbound.id for e in first] == ["telegram:update:1", "telegram:update:2"]
    assert [e.inbound.id for e in again] == ["telegram:update:3"]
    assert len(await inbox.pending()) == 3


async def test_the_reply_and_the_parts_sent_survive_a_restart(tmp_path: Path) -> None:
    entry = await Inbox(tmp_path).accept(inbound(1))
    assert entry is not None
    entry = await Inbox(tmp_path).answered(entry, "a long answer")
    await Inbox(tmp_path).part_sent(entry, 2)

    [again] = await Inbox(tmp_path).pending()

    assert (again.inbound, again.reply, again.sent) == (inbound(1), "a long answer", 2)


async def test_an_entry_of_the_first_format_is_still_answered(tmp_path: Path) -> None:
    old = {"version": 1, "seq": 7, "id": "telegram:update:4", "channel": "telegram", "chat_id": 5}
    old |= {"user_id": 5, "text": "hi", "received_at": NOW.isoformat()}
    (tmp_path / "old.json").write_text(json.dumps(old))

    [entry] = await Inbox(tmp_path).pending()

    assert (entry.inbound.text, entry.reply, entry.sent) == ("hi", None, 0)


async def test_attachments_survive_a_restart(tmp_path: Path) -> None:
    voice = Attachment("voice", "AwACAgI", None, "audio/ogg", 5120, duration=3)
    sticker = Attachment("other", "", what="sticker")
    sent = replace(inbound(1), text="", attachments=(voice, sticker))
    await Inbox(tmp_path).accept(sent)

    [entry] = await Inbox(tmp_path).pending()

    assert entry.inbound == sent


async def test_done_is_idempotent(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path)
    await inbox.accept(inbound(1))
    await inbox.done("telegram:update:1")
    await inbox.done("telegram:update:1")
    assert await inbox.pending() == []


async def test_unreadable_entry_is_set_aside_not_lost(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path)
    await inbox.accept(inbound(1))
    (tmp_path / "broken.json").write_text("{not json")
    assert [e.inbound.id for e in await inbox.pending()] == ["telegram:update:1"]
    assert (tmp_path / "broken.json.unreadable").read_text() == "{not json"
