"""The inbox journal: accept, done, pending in arrival order, unreadable entries set aside."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bot.models import Inbound
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
    assert [i.id for i in await inbox.pending()] == ["telegram:update:5", "telegram:update:9"]
    assert (await inbox.pending())[0] == inbound(5)


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
    assert [i.id for i in await inbox.pending()] == ["telegram:update:1"]
    assert (tmp_path / "broken.json.unreadable").read_text() == "{not json"
