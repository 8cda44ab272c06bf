"""A database restart under a turn (`bot.replicas`), on a PostgreSQL server of the test's own
(skipped only without `pg_ctl`): the turn's path lock and its journal writes wait for the
server to come back instead of failing the turn, a document that cannot be read says so
(`StoreAway`: the turn is made again once it is back, not answered with an apology), and a
worker whose entry was taken by another sends nothing more (on the shared test server)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from psycopg_pool import AsyncConnectionPool

from bot.errors import StoreAway
from bot.models import Inbound
from bot.replicas.database import WAIT_FOR_CONNECTION, migrate, open_pool
from bot.replicas.documents import PgDocuments, open_documents
from bot.replicas.journal import PgJournal
from bot.replicas.locks import PgLocks
from bot.replicas.queue import FencedReplier
from bot.storage.inbox import Fenced
from tests.pg import given_away, private_server


def inbound(n: int) -> Inbound:
    return Inbound(f"u{n}", "telegram", 1, 1, f"m{n}", datetime.now(UTC))


class Parts:
    """A replier that keeps what it sent."""

    def __init__(self) -> None:
        self.sent: list[object] = []

    def parts(self, text: str) -> list[object]:
        return [text]

    async def send_part(self, part: object) -> None:
        self.sent.append(part)

    def typing(self) -> AbstractAsyncContextManager[None]:
        raise NotImplementedError

    async def acknowledge(self) -> None:
        return None


@asynccontextmanager
async def journal_on(url: str) -> AsyncIterator[tuple[AsyncConnectionPool, PgJournal]]:
    """A pool over the database at `url`, its tables made, and the journal on it."""
    pool = open_pool(url)
    await pool.open()
    try:
        await migrate(pool)
        yield pool, PgJournal(pool)
    finally:
        await pool.close()


@pytest.mark.timeout(120)
async def test_a_lock_and_the_journal_s_writes_wait_through_a_database_restart() -> None:
    async with private_server() as server, journal_on(server.url) as (pool, journal):
        await journal.accept(inbound(1))
        entry = await journal.take("u1")
        assert entry is not None
        await asyncio.to_thread(server.stop)

        async def turn() -> None:
            async with PgLocks(pool, root=Path("/ws")).hold(Path("/ws/sessions/1.json")):
                answered = await journal.answered(entry, "re: m1")
            await journal.part_sent(answered, 1)
            await journal.done("u1", fence=answered.fence)

        running = asyncio.create_task(turn())
        await asyncio.sleep(WAIT_FOR_CONNECTION + 1)  # a pool's wait, and more
        assert not running.done()  # waiting, not failed
        await asyncio.to_thread(server.start)
        await asyncio.wait_for(running, 60)

        assert await journal.pending() == []


@pytest.mark.timeout(120)
async def test_documents_say_the_database_is_away_so_the_turn_is_made_again(
    tmp_path: Path,
) -> None:
    async with private_server() as server:
        documents = open_documents(server.url, tmp_path)
        await asyncio.to_thread(documents.connect)
        try:
            note = tmp_path / "memory" / "MEMORY.md"
            await asyncio.to_thread(documents.write, note, b"- likes tea\n")
            await asyncio.to_thread(server.stop)
            with pytest.raises(StoreAway):  # the queue's job fails and runs again (`queue`)
                await asyncio.to_thread(documents.read, note)
            await asyncio.to_thread(server.start)
            assert await _read_once_back(documents, note) == b"- likes tea\n"
        finally:
            await asyncio.to_thread(documents.close)


async def _read_once_back(documents: PgDocuments, path: Path) -> bytes | None:
    """Read as the turn made again does: its job runs again a second later until the pool has
    its connections back (it waits between reconnections, longer after each failure)."""
    for _ in range(60):
        try:
            return await asyncio.to_thread(documents.read, path)
        except StoreAway:
            await asyncio.sleep(1.0)
    raise AssertionError("the database did not come back within a minute")


async def test_a_worker_whose_entry_was_taken_since_sends_no_further_part(pg_url: str) -> None:
    async with journal_on(pg_url) as (_pool, journal):
        await journal.accept(inbound(2))
        stale = await journal.take("u2")
        assert stale is not None
        channel = Parts()
        replier = FencedReplier(channel, lambda: journal.holds("u2", stale.fence))
        await replier.send_part("first")

        await given_away(journal.pool, "u2")  # the sweep gave it to another replica …
        await journal.take("u2")  # … which took it
        with pytest.raises(Fenced):
            await replier.send_part("second")

        assert channel.sent == ["first"]
