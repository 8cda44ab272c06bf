"""A turn's hold on its chat's message, and the stall sweep that ends it: replicated mode's
fencing, for any write or request that must be one turn's alone.

**The fence.** `mnemo_inbox.fence` says which take of a message holds it: a worker's `take`
adds one, and each write of its turn (`answered`, `part_sent`, `done`, `merged`) is
`… WHERE id = <message> AND fence = <its take>`, refused (`Fenced`) once another take came.
Another store may fence its writes with the same token: `(inbound id, fence)`, checked in the
writing transaction.

**The lease.** `mnemo_inbox.lease_until` says until when (the database's clock) that take holds
the message for sure. The take sets it `lease` seconds ahead; the replica renews it for every
turn it runs each `renew_every` seconds (`Leases.keep`, one UPDATE for all of them) and at each
of a turn's looks. The sweep (`give_away`) hands a running job to another replica only once the
lease of its message ran out, and in the same transaction adds one to the fence: the holder's
renewal and the give-away take the same row lock, so one of them comes first and the other sees
it. A replica that stops answering (killed, frozen, cut off, starved) has its chats moving on
within `lease` + `renew_every` seconds (the sweep runs every `renew_every` on every replica;
nothing in it waits on a lock: rows another session holds are skipped until the next round).

**The holder's side**, on its own monotonic clock (it runs on while a process is frozen): a
renewal that started at t (before its query went out) lets the turn act until
t + `lease` − `margin`. Each request to Telegram or the model checks that as its first bytes are
about to be written (`Lease.check`, run by the HTTP clients: `bot.storage.inbox.wire_hook`), so
a process frozen anywhere between its last look and that write sends nothing when it wakes past
its hold (`LeaseLapsed`, and the look that follows finds the fence moved). The successor's take
comes after `lease_until`, which is later than t + `lease`. What is left: the microseconds
between that check and the kernel taking the bytes, and a part Telegram took just before a kill
or a freeze whose record the process had not written yet (Telegram cannot be asked).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import structlog
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from bot.storage.inbox import Entry, LeaseLapsed

log = structlog.get_logger(__name__)

RENEW = """
UPDATE mnemo_inbox AS m SET lease_until = now() + make_interval(secs => %s)
FROM unnest(%s::text[], %s::int[]) AS held(id, fence)
WHERE m.id = held.id AND m.fence = held.fence AND m.done_at IS NULL
RETURNING m.id
"""
# running jobs whose latest start is older than the lease, locked; those another session
# holds are left for the next round
RUNNING = """
SELECT j.id, j.lock, j.args->>'update'
FROM procrastinate_jobs AS j
WHERE j.status = 'doing' AND j.task_name = %(task)s
  AND NOT EXISTS (
      SELECT 1 FROM procrastinate_events AS e
      WHERE e.job_id = j.id AND e.type = 'started'
        AND e.at > now() - make_interval(secs => %(lease)s))
FOR UPDATE OF j SKIP LOCKED
"""
# whether the message holds its job back: open and leased, or answered so lately that its
# worker may still be writing the job's end
MESSAGE = """
SELECT (done_at IS NULL AND lease_until >= now())
    OR done_at >= now() - make_interval(secs => %s)
FROM mnemo_inbox WHERE id = %s FOR UPDATE SKIP LOCKED
"""
FENCE = "UPDATE mnemo_inbox SET fence = fence + 1, lease_until = NULL WHERE id = %s"
RETRY = "SELECT procrastinate_retry_job_v2(%s, now(), NULL, NULL, NULL)"


@dataclass
class Lease:
    """One turn's hold, as its replica sees it."""

    inbound_id: str
    fence: int
    until: float  # monotonic: the turn may act before then
    lost: bool = False  # a renewal found the message another take's

    def valid(self) -> bool:
        return not self.lost and time.monotonic() < self.until

    def check(self) -> None:
        """Raise `LeaseLapsed` unless the hold is still sure (run at the wire)."""
        if not self.valid():
            raise LeaseLapsed(self.inbound_id)


class Leases:
    """The holds of the turns this replica runs, renewed together."""

    def __init__(self, pool: AsyncConnectionPool, *, lease: float, renew_every: float) -> None:
        self.pool = pool
        self.lease = lease
        self.renew_every = renew_every
        self.margin = lease / 4  # a renewal's own time, clocks' drift: well below the lease
        self._held: dict[str, Lease] = {}

    def hold(self, entry: Entry, since: float) -> Lease:
        """The hold a take that started at `since` (monotonic) gave."""
        lease = Lease(entry.inbound.id, entry.fence, since + self.lease - self.margin)
        self._held[lease.inbound_id] = lease
        return lease

    def renewed(self, lease: Lease, since: float) -> None:
        """A look that started at `since` found the message still the turn's."""
        lease.until = max(lease.until, since + self.lease - self.margin)

    def release(self, lease: Lease) -> None:
        if self._held.get(lease.inbound_id) is lease:
            del self._held[lease.inbound_id]

    async def renew(self) -> None:
        """Renew every hold at once; a hold whose message another take has is lost."""
        held = list(self._held.values())
        if not held:
            return
        since = time.monotonic()
        ids, fences = [lease.inbound_id for lease in held], [lease.fence for lease in held]
        async with self.pool.connection() as conn:
            cursor = await conn.execute(RENEW, (self.lease, ids, fences))
            kept = {str(row[0]) for row in await cursor.fetchall()}
        for lease in held:
            if lease.inbound_id in kept:
                self.renewed(lease, since)
            else:
                lease.lost = True


async def give_away(conn: AsyncConnection[Any], *, task: str, lease: float) -> list[str]:
    """In `conn`'s transaction: put back in the queue each running job whose message's lease
    ran out (or that never took its message), its fence moved on; the chats of those given."""
    cursor = await conn.execute(RUNNING, {"task": task, "lease": lease})
    given: list[str] = []
    for job_id, chat, update in await cursor.fetchall():
        if await _lapsed(conn, update, lease):
            if update is not None:
                await fence_off(conn, update)
            await conn.execute(RETRY, (job_id,))
            log.warning("queue_job_stalled", job=job_id, chat=chat)
            given.append(str(chat))
    return given


async def fence_off(conn: AsyncConnection[Any], inbound_id: str) -> None:
    """End the current take's hold on the message: the next take need not wait, and the old
    one's writes and looks are refused from now on."""
    await conn.execute(FENCE, (inbound_id,))


async def _lapsed(conn: AsyncConnection[Any], update: str | None, lease: float) -> bool:
    """Whether the job's message is free to give away: its lease ran out, it was answered a
    lease ago (the job's end was lost), or there is none; not when another session holds its
    row (the next round looks again)."""
    if update is None:
        return True
    row = await (await conn.execute(MESSAGE, (lease, update))).fetchone()
    if row is None:
        cursor = await conn.execute("SELECT 1 FROM mnemo_inbox WHERE id = %s", (update,))
        return await cursor.fetchone() is None
    return not row[0]
