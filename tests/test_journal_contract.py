"""The journal's contract, for both journals: the workspace's files (`Inbox`) and the one every
replica shares (`PgJournal`; skipped without `MNEMO_TEST_PG`). Then what only the shared one
promises: tombstones, fenced writes, queueing in the accepting transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.storage.inbox import Entry, Fenced, Inbox, Journal
from tests.pg import given_away, pg_database
from tests.test_inbox import inbound

Opener = Callable[[], AbstractAsyncContextManager[Journal]]  # the journal, opened (again)


@asynccontextmanager
async def pg_journal(url: str, enqueue: Any = None) -> AsyncIterator[Any]:
    from bot.replicas.database import migrate, open_pool
    from bot.replicas.journal import PgJournal

    pool = open_pool(url)
    await pool.open()
    try:
        await migrate(pool)
        yield PgJournal(pool, enqueue=enqueue)
    finally:
        await pool.close()


@pytest.fixture(params=["files", "postgresql"])
async def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    if request.param == "files":

        @asynccontextmanager
        async def files() -> AsyncIterator[Journal]:
            inbox = Inbox(tmp_path)
            yield inbox
            inbox.close()

        yield files
        return
    async with pg_database() as url:
        yield lambda: pg_journal(url)


async def taken(journal: Journal, entry: Entry) -> Entry:
    """The entry as a worker answering it holds it (the shared journal fences it)."""
    take: Callable[[str], Awaitable[Entry | None]] | None = getattr(journal, "take", None)
    if take is None:
        return entry
    held = await take(entry.inbound.id)
    assert held is not None
    return held


async def test_pending_is_what_is_not_done_in_arrival_order(reopen: Opener) -> None:
    async with reopen() as journal:
        for n in (5, 3, 9):
            await journal.accept(inbound(n))
        await journal.done("telegram:update:3", fence=(await taken(journal, _e(3))).fence)
    async with reopen() as journal:
        pending = await journal.pending()
    assert [e.inbound.id for e in pending] == ["telegram:update:5", "telegram:update:9"]
    assert pending[0].inbound == inbound(5)
    assert (pending[0].reply, pending[0].sent) == (None, 0)


async def test_an_id_journaled_and_not_done_is_not_taken_again(reopen: Opener) -> None:
    async with reopen() as journal:
        first = await journal.accept_all([inbound(1), inbound(2)])
    async with reopen() as journal:
        again = await journal.accept_all([inbound(2), inbound(3)])
        assert await journal.accept(inbound(1)) is None
        pending = await journal.pending()
    assert [e.inbound.id for e in first] == ["telegram:update:1", "telegram:update:2"]
    assert [e.inbound.id for e in again] == ["telegram:update:3"]
    assert len(pending) == 3


async def test_the_reply_and_the_parts_sent_outlive_a_restart(reopen: Opener) -> None:
    async with reopen() as journal:
        [entry] = await journal.accept_all([inbound(1), inbound(1)])
        entry = await taken(journal, entry)
        entry = await journal.answered(entry, "a long answer")
        await journal.part_sent(entry, 1)
        await journal.part_sent(entry, 2)
    async with reopen() as journal:
        [again] = await journal.pending()
    assert (again.reply, again.sent) == ("a long answer", 2)
    assert again.inbound == inbound(1)


async def test_an_entry_accepted_with_its_reply_is_only_sent(reopen: Opener) -> None:
    async with reopen() as journal:
        entry = await journal.accept_answered(inbound(1), "a reminder")
        assert entry is not None and entry.reply == "a reminder"
        assert await journal.accept_answered(inbound(1), "a reminder") is None
    async with reopen() as journal:
        [again] = await journal.pending()
    assert (again.inbound, again.reply, again.sent) == (inbound(1), "a reminder", 0)


async def test_entries_answered_together_leave_one_that_names_the_others(
    reopen: Opener,
) -> None:
    from dataclasses import replace

    async with reopen() as journal:
        first, second = await journal.accept_all([inbound(1), inbound(2)])
        second = await taken(journal, second)
        both = await journal.merged([first, second], replace(inbound(2), text="one and two"))
        assert both.absorbed == ("telegram:update:1",)
    async with reopen() as journal:
        [left] = await journal.pending()
    assert (left.inbound.text, left.absorbed) == ("one and two", ("telegram:update:1",))


async def test_group_chatter_and_attachments_come_back_as_they_went_in(reopen: Opener) -> None:
    from dataclasses import replace

    from bot.models import Attachment

    photo = Attachment(kind="photo", file_id="F1", mime_type="image/jpeg", size=10, what="a cat")
    sent = [replace(inbound(4), addressed=False), replace(inbound(5), attachments=(photo,))]
    async with reopen() as journal:
        await journal.accept_all(sent)
    async with reopen() as journal:
        assert [e.inbound for e in await journal.pending()] == sent


# ----------------------------------------------------------------------------- shared only


def _e(n: int) -> Entry:
    return Entry(inbound(n), 0)


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[Any]:
    async with pg_journal(pg_url) as journal:
        yield journal


async def test_a_done_message_delivered_again_is_still_refused(pg: Any) -> None:
    """Telegram repeats an update whose 200 it missed: the tombstone recognises it."""
    entry = await pg.take((await pg.accept(inbound(1))).inbound.id)
    await pg.done(entry.inbound.id, fence=entry.fence)

    assert await pg.accept(inbound(1)) is None
    assert await pg.pending() == []
    assert await pg.take("telegram:update:1") is None


async def test_a_worker_whose_entry_was_taken_since_writes_nothing(pg: Any) -> None:
    from bot.replicas.journal import Held

    await pg.accept(inbound(1))
    stale = await pg.take("telegram:update:1")
    with pytest.raises(Held):  # its lease still runs
        await pg.take("telegram:update:1")
    await given_away(pg.pool, "telegram:update:1")  # the stale worker was given up as stalled
    fresh = await pg.take("telegram:update:1")

    with pytest.raises(Fenced):
        await pg.answered(stale, "from the stale worker")
    fresh = await pg.answered(fresh, "the answer")
    with pytest.raises(Fenced):
        await pg.part_sent(stale, 1)
    with pytest.raises(Fenced):
        await pg.done(stale.inbound.id, fence=stale.fence)
    await pg.part_sent(fresh, 1)

    [entry] = await pg.pending()
    assert (entry.reply, entry.sent) == ("the answer", 1)
    await pg.done(fresh.inbound.id, fence=fresh.fence)
    assert await pg.pending() == []
    assert await pg.accept(inbound(2)) is not None  # the pool's connections read rows as before


async def test_what_is_queued_commits_with_what_is_journaled(pg_url: str) -> None:
    """A queue that fails makes the whole accept fail: nothing is journaled that is not
    queued (the channel then answers 500 and Telegram sends the update again)."""
    queued: list[str] = []

    async def enqueue(conn: Any, entry: Entry) -> None:
        if entry.inbound.id.endswith(":3"):
            raise RuntimeError("queue refused")
        await conn.execute("SELECT 1")
        queued.append(entry.inbound.id)

    async with pg_journal(pg_url, enqueue) as journal:
        with pytest.raises(RuntimeError):
            await journal.accept_all([inbound(1), inbound(2), inbound(3)])
        assert await journal.pending() == []
        accepted = await journal.accept_all([inbound(1), inbound(2)])

    assert [e.inbound.id for e in accepted] == ["telegram:update:1", "telegram:update:2"]
    assert queued == ["telegram:update:1", "telegram:update:2"] * 2
