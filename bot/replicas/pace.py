"""`SharedPace`: Telegram's send limits for a bot (about 30 messages a second overall, about 20
a minute into one group, whatever the number of replicas) shared by every replica through rows
of one PostgreSQL table.

Each request that names a chat takes a slot first: one `UPDATE` of a row's theoretical arrival
time (`tat`, the generic cell rate algorithm), the bot's row and, for a group, the group's row
before it. The new `tat` is the later of the old one and now, plus one gap (1/30 s; 3 s for a
group); the request may go at `tat` less the limit's period (1 s; a minute), so a bot quiet for
that long may send the period's worth at once, as PTB's own limiter allows one process, then
one per gap; the replicas together never send more. A slot costs one short row update (the
row's lock serialises them; about a millisecond each, far below the rate). When the database
cannot be reached the replica paces itself alone, at the overall rate.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog
from aiolimiter import AsyncLimiter
from psycopg import Error as PsycopgError
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bot.replicas.database import OUTAGES, make_schema

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Limit:
    count: float  # requests allowed …
    period: float  # … per this many seconds

    @property
    def gap(self) -> float:
        return self.period / self.count


OVERALL = Limit(30, 1.0)  # Telegram's, for the whole bot
GROUP_LIMIT = Limit(20, 60.0)  # Telegram's, into one group
BOT_KEY = "bot"

SCHEMA = """
CREATE TABLE IF NOT EXISTS mnemo_send_pace (
    key text PRIMARY KEY,  -- "bot", or "group:<chat id>"
    tat double precision NOT NULL
);
"""
TAKE = """
INSERT INTO mnemo_send_pace AS p VALUES (%(key)s, extract(epoch FROM clock_timestamp()) + %(gap)s)
ON CONFLICT (key) DO UPDATE
    SET tat = greatest(p.tat, extract(epoch FROM clock_timestamp())) + %(gap)s
RETURNING tat - %(period)s, extract(epoch FROM clock_timestamp())
"""


@dataclass(frozen=True)
class Slot:
    at: float  # when the request may go (seconds since the epoch, the database's clock)
    wait: float  # seconds from now until then (0: at once)


class SharedPace:
    def __init__(
        self, pool: AsyncConnectionPool, *, overall: Limit = OVERALL, group: Limit = GROUP_LIMIT
    ) -> None:
        self.pool = pool
        self.overall = overall
        self.group = group
        self._alone = AsyncLimiter(overall.count, overall.period)  # while the database is away
        self._made = False

    async def __call__(self, group: int | str | None) -> None:
        """Wait for this request's slots: its group's (when `group` names one), then the bot's."""
        try:
            if group is not None:
                await asyncio.sleep((await self.take(f"group:{group}", self.group)).wait)
            await asyncio.sleep((await self.take(BOT_KEY, self.overall)).wait)
        except (PsycopgError, PoolTimeout, OSError) as exc:
            OUTAGES.away("send_pace: paced alone meanwhile", exc)
            await self._alone.acquire()

    async def take(self, key: str, limit: Limit) -> Slot:
        """The next slot of the row `key`, paced at `limit`."""
        async with self.pool.connection() as conn:
            if not self._made:
                async with conn.transaction():
                    await make_schema(conn, SCHEMA)
                self._made = True
            arguments = {"key": key, "gap": limit.gap, "period": limit.period}
            cursor = await conn.execute(TAKE, arguments)
            row = await cursor.fetchone()
        assert row is not None
        at, now = float(row[0]), float(row[1])
        return Slot(at=max(at, now), wait=max(0.0, at - now))
