"""`SharedPace`: Telegram's overall send rate (about 30 messages a second per bot, whatever the
number of replicas) shared by every replica through one PostgreSQL row.

Each request that names a chat takes a slot first: one `UPDATE` of the row's theoretical
arrival time (`tat`, the generic cell rate algorithm). The new `tat` is the later of the old
one and now, plus one gap (1/`per_second` s); the request may go at `tat` less one second, so a
bot idle for a second may send `per_second` requests at once, as PTB's own limiter allows one
process, and then one per gap; the replicas together never send more. A slot costs one short
row update (the row's lock serialises them; about a millisecond each, far below the rate).
When the database cannot be reached the replica paces itself alone, at the same rate.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog
from aiolimiter import AsyncLimiter
from psycopg import Error as PsycopgError
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bot.replicas.database import SCHEMA_LOCK

log = structlog.get_logger(__name__)
PER_SECOND = 30.0  # Telegram's overall limit for a bot

SCHEMA = """
CREATE TABLE IF NOT EXISTS mnemo_send_pace (
    id  smallint PRIMARY KEY CHECK (id = 1),
    tat double precision NOT NULL
);
"""
TAKE = """
INSERT INTO mnemo_send_pace AS p VALUES (1, extract(epoch FROM clock_timestamp()) + %(gap)s)
ON CONFLICT (id) DO UPDATE
    SET tat = greatest(p.tat, extract(epoch FROM clock_timestamp())) + %(gap)s
RETURNING tat - 1.0, extract(epoch FROM clock_timestamp())
"""


@dataclass(frozen=True)
class Slot:
    at: float  # when the request may go (seconds since the epoch, the database's clock)
    wait: float  # seconds from now until then (0: at once)


class SharedPace:
    def __init__(self, pool: AsyncConnectionPool, *, per_second: float = PER_SECOND) -> None:
        self.pool = pool
        self.gap = 1.0 / per_second
        self._alone = AsyncLimiter(per_second, 1)  # while the database is away
        self._made = False

    async def __call__(self) -> None:
        """Wait for this request's slot."""
        try:
            slot = await self.take()
        except (PsycopgError, PoolTimeout, OSError) as exc:
            log.warning("send_pace_alone", error=type(exc).__name__)
            await self._alone.acquire()
            return
        if slot.wait > 0:
            await asyncio.sleep(slot.wait)

    async def take(self) -> Slot:
        """The next slot of the cluster's."""
        async with self.pool.connection() as conn:
            if not self._made:
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                    await conn.execute(SCHEMA)
                self._made = True
            cursor = await conn.execute(TAKE, {"gap": self.gap})
            row = await cursor.fetchone()
        assert row is not None
        at, now = float(row[0]), float(row[1])
        return Slot(at=max(at, now), wait=max(0.0, at - now))
