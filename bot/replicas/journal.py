"""`PgJournal`: the journal (`bot.storage.inbox.Journal`) as rows every replica shares.

Accepting is one transaction: the rows inserted (a message already there is skipped, answered or
not: its tombstone says so) and, for each new one, `enqueue` called on the same connection (the
queue's job is deferred in that transaction, `bot.replicas.queue`), so a message is journaled
and queued together or not at all. The channel confirms the message only after the commit.

A worker `take`s an entry before answering it, and holds it under a lease (`bot.replicas.lease`:
the fence and the lease, replicated mode's fencing); its writes (`answered`, `part_sent`, `done`)
are refused with `Fenced` once another worker took the entry since, and each renews the lease, as
`holds` does before each part is sent (`bot.replicas.queue`). A take waits for another take's
lease to run out (`Held`: the job is run again shortly), unless the sweep gave the entry away.
A worker's writes wait for a database that is away (a restart) rather than fail: a reply made
is kept, a part sent is recorded, not sent again.

Quick follow-ups are answered together as one process answers them (`bot.turn.together` says
which messages may join and how they read as one): `with_follow_ups`, run by the job of a chat's
message once it holds its entry, waits the debounce since the entry was accepted, takes the
person's plain messages queued behind it (each under a hold of its own: a take fences it to this
job), merges them into the last (`merged`) and hands the turn that entry and its hold. Their own
jobs, queued behind under the chat's lock, find them done. A stop or a stall at any point leaves
each message answered once: before the merge every entry is its own; after it the last holds
them all, for its own job to answer once this one is given away.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from datetime import timedelta
from typing import Any

import structlog
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from bot.models import Inbound
from bot.replicas.database import through_outage
from bot.replicas.lease import Lease, Leases
from bot.storage.inbox import Entry, Fenced, decode_inbound, encode_inbound
from bot.turn.together import joined, may_join, run_of

log = structlog.get_logger(__name__)
Enqueue = Callable[[AsyncConnection[Any], Entry], Awaitable[None]]


LEASE = 10.0  # seconds a take holds its entry for sure, renewed (`bot.replicas.lease`)
FOLLOWING = 20  # the most later entries `following` reads


class Held(Exception):
    """The entry is another take's, whose lease has not run out: try again later."""


@dataclass(eq=False)
class PgJournal:
    pool: AsyncConnectionPool
    _: KW_ONLY
    enqueue: Enqueue | None = None
    lease: float = LEASE

    def close(self) -> None:
        """Nothing of its own to wait for: the pool is closed by its owner."""

    async def accept(self, inbound: Inbound) -> Entry | None:
        accepted = await self.accept_all([inbound])
        return accepted[0] if accepted else None

    async def accept_all(self, inbounds: Sequence[Inbound]) -> list[Entry]:
        """Journal (and queue) the messages not journaled before, in one transaction."""
        if not inbounds:
            return []
        async with self.pool.connection() as conn, conn.transaction():
            accepted = [await self._insert(conn, inbound, None) for inbound in inbounds]
        return [entry for entry in accepted if entry is not None]

    async def accept_answered(self, inbound: Inbound, reply: str) -> Entry | None:
        """Journal (and queue) an entry whose reply is known already (a reminder): only sent
        from here on; None when it was journaled before."""
        async with self.pool.connection() as conn, conn.transaction():
            return await self._insert(conn, inbound, reply)

    async def _insert(
        self, conn: AsyncConnection[Any], inbound: Inbound, reply: str | None
    ) -> Entry | None:
        cursor = await conn.execute(
            "INSERT INTO mnemo_inbox (id, channel, session_key, inbound, reply)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING seq",
            (inbound.id, inbound.channel, inbound.session_key, _document(inbound), reply),
        )
        row = await cursor.fetchone()
        if row is None:
            log.info("inbox_duplicate", inbound=inbound.id)
            return None
        entry = Entry(inbound, int(row[0]), reply)
        if self.enqueue is not None:
            await self.enqueue(conn, entry)
        return entry

    async def take(self, inbound_id: str) -> Entry | None:
        """The entry for a worker about to answer it, fenced and leased to that worker; None
        when it is done (or was never journaled); `Held` while another take's lease runs."""
        return await through_outage(lambda: self._take(inbound_id), "take")

    async def _take(self, inbound_id: str) -> Entry | None:
        async with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cursor:
            await cursor.execute(
                "UPDATE mnemo_inbox SET fence = fence + 1, lease_until = now() + %s"
                " WHERE id = %s AND done_at IS NULL"
                " AND (lease_until IS NULL OR lease_until < now())"
                " RETURNING seq, inbound, reply, sent, fence, absorbed",
                (timedelta(seconds=self.lease), inbound_id),
            )
            row = await cursor.fetchone()
            if row is None and await self._open(conn, inbound_id):
                raise Held(inbound_id)
        return None if row is None else _entry(row)

    async def release(self, inbound_id: str, fence: int) -> None:
        """Let go of the entry's lease (a take that ends without finishing it): the next take
        need not wait for it to run out."""
        async with self.pool.connection() as conn:
            await conn.execute(
                "UPDATE mnemo_inbox SET lease_until = NULL WHERE id = %s AND fence = %s",
                (inbound_id, fence),
            )

    async def answered(self, entry: Entry, reply: str) -> Entry:
        await through_outage(
            lambda: self._fenced(entry, "reply = %s, sent = 0", (reply,)), "answered"
        )
        return replace(entry, reply=reply, sent=0)

    async def part_sent(self, entry: Entry, sent: int) -> Entry:
        await through_outage(
            lambda: self._fenced(entry, "sent = GREATEST(sent, %s)", (sent,)), "part_sent"
        )
        return replace(entry, sent=sent)

    async def holds(self, inbound_id: str, fence: int) -> None:
        """Raise `Fenced` unless the entry is still the worker's that took it as `fence`; if
        it is, its lease is renewed."""
        await through_outage(lambda: self._fenced_look(inbound_id, fence), "holds")

    async def _fenced_look(self, inbound_id: str, fence: int) -> None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "UPDATE mnemo_inbox SET lease_until = now() + %s"
                " WHERE id = %s AND fence = %s AND done_at IS NULL",
                (timedelta(seconds=self.lease), inbound_id, fence),
            )
            if cursor.rowcount == 0:
                raise Fenced(inbound_id)

    async def merged(self, entries: Sequence[Entry], inbound: Inbound) -> Entry:
        """Answer `entries` (one chat's, not answered yet) together as `inbound`: the last one
        holds it and names the others, which are closed in the same transaction."""
        *earlier, last = entries
        absorbed = tuple(e.inbound.id for e in earlier) + last.absorbed
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(
                "UPDATE mnemo_inbox SET inbound = %s, absorbed = %s, reply = NULL, sent = 0"
                " WHERE id = %s AND fence = %s AND done_at IS NULL",
                (_document(inbound), list(absorbed), last.inbound.id, last.fence),
            )
            if cursor.rowcount == 0:
                raise Fenced(last.inbound.id)
            await conn.execute(
                "UPDATE mnemo_inbox SET done_at = now() WHERE id = ANY(%s) AND done_at IS NULL",
                (list(absorbed),),
            )
        return replace(last, inbound=inbound, reply=None, sent=0, absorbed=absorbed)

    async def following(self, entry: Entry, *, limit: int = FOLLOWING) -> tuple[float, list[Entry]]:
        """Seconds since `entry` was accepted (the database's clock), and the entries of its
        chat accepted after it that are not done yet, in arrival order (not taken: `take` each
        before answering it)."""
        async with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cursor:
            await cursor.execute(
                "SELECT extract(epoch FROM now() - accepted_at) AS age FROM mnemo_inbox"
                " WHERE id = %s",
                (entry.inbound.id,),
            )
            row = await cursor.fetchone()
            await cursor.execute(
                "SELECT seq, inbound, reply, sent, fence, absorbed FROM mnemo_inbox"
                " WHERE session_key = %s AND seq > %s AND done_at IS NULL ORDER BY seq LIMIT %s",
                (entry.inbound.session_key, entry.seq, limit),
            )
            later = [_entry(found) for found in await cursor.fetchall()]
        return (float(row["age"]) if row else 0.0), later

    async def done(self, inbound_id: str, *, fence: int = 0) -> None:
        await through_outage(lambda: self._done(inbound_id, fence), "done")

    async def _done(self, inbound_id: str, fence: int) -> None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "UPDATE mnemo_inbox SET done_at = now()"
                " WHERE id = %s AND fence = %s AND done_at IS NULL",
                (inbound_id, fence),
            )
            if cursor.rowcount == 0 and await self._open(conn, inbound_id):
                raise Fenced(inbound_id)

    async def pending(self) -> list[Entry]:
        """The entries not done, in arrival order (the console's replay, tests: replicas are
        dispatched by the queue)."""
        async with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cursor:
            await cursor.execute(
                "SELECT seq, inbound, reply, sent, fence, absorbed FROM mnemo_inbox"
                " WHERE done_at IS NULL ORDER BY seq"
            )
            rows = await cursor.fetchall()
        return [_entry(row) for row in rows]

    async def _fenced(self, entry: Entry, assignments: str, values: tuple[object, ...]) -> None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"UPDATE mnemo_inbox SET {assignments}, lease_until = now() + %s"  # the methods'
                " WHERE id = %s AND fence = %s AND done_at IS NULL",
                (*values, timedelta(seconds=self.lease), entry.inbound.id, entry.fence),
            )
            if cursor.rowcount == 0:
                raise Fenced(entry.inbound.id)

    async def _open(self, conn: AsyncConnection[Any], inbound_id: str) -> bool:
        cursor = await conn.execute(
            "SELECT 1 FROM mnemo_inbox WHERE id = %s AND done_at IS NULL", (inbound_id,)
        )
        return await cursor.fetchone() is not None


def _document(inbound: Inbound) -> Jsonb:
    return Jsonb(encode_inbound(inbound))


def _entry(row: dict[str, Any]) -> Entry:
    return Entry(
        decode_inbound(row["inbound"]),
        int(row["seq"]),
        row["reply"],
        int(row["sent"]),
        absorbed=tuple(row["absorbed"]),
        fence=int(row["fence"]),
    )


async def with_follow_ups(
    journal: PgJournal, leases: Leases, entry: Entry, lease: Lease, *, debounce: float
) -> tuple[Entry, Lease]:
    """The entry with the follow-ups that may be answered with it, merged, and the hold the
    turn keeps; the entry and its hold as they were when there are none (or no debounce)."""
    if not debounce or not may_join(entry) or _taken_before([entry], held=1):
        return entry, lease
    age, later = await journal.following(entry)
    if age < debounce:  # just arrived: its follow-ups may still come
        await asyncio.sleep(debounce - age)
        _, later = await journal.following(entry)
    taken: list[tuple[Entry, Lease]] = []
    for follower in run_of([entry, *later], alone=_taken_before(later))[1:]:
        since = time.monotonic()
        try:
            took = await journal.take(follower.inbound.id)
        except Held:  # a take of its own job still holds it: answered on its own
            break
        if took is None:
            break
        taken.append((took, leases.hold(took, since)))
    if not taken:
        return entry, lease
    run = [entry, *(took for took, _ in taken)]
    try:
        merged = await journal.merged(run, joined(run))
    except BaseException:  # the followers' holds run out; their own jobs answer them
        for _, held in taken:
            leases.release(held)
        raise
    for held in [lease, *(held for _, held in taken[:-1])]:
        leases.release(held)
    log.info("queue_follow_ups_together", inbound=merged.inbound.id, messages=len(run))
    return merged, taken[-1][1]


def _taken_before(entries: Sequence[Entry], *, held: int = 0) -> set[str]:
    """The entries a take before held (each take and each give-away moves the fence on; `held`:
    the takes this job made of them): a turn a stop or a stall cut, whose answer may be in the
    session already, is answered on its own (`bot.turn.together`'s `alone`); merged with the
    next one it would be asked of the model again."""
    return {entry.inbound.id for entry in entries if entry.fence > held}
