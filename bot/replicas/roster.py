"""`PgRoster`: the roster (`bot.storage.roster`: owners, paired users, pairing requests, the claim
code) in PostgreSQL, one row every replica shares, so a user paired on one replica may talk to
any, and the claim code is one for the cluster: whichever replica starts first makes it, the
others read it, and `/claim` works on any of them.

The row holds the document `state/paired.json` holds in the embedded mode (`roster.dumps`), and
a `version` that each change bumps. A change is a read-modify-write under the row's lock
(`SELECT … FOR UPDATE`), then `NOTIFY mnemo_roster`: every replica `LISTEN`s and reads the row
again, so `current()` (read at every message, never waiting on the database) lags another
replica's change by about a notification's delivery. After a lost connection a replica reads
the row again before listening, so a change made meanwhile is not missed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import structlog
from psycopg import Error as PsycopgError
from psycopg_pool import AsyncConnectionPool

from bot.errors import StorageError
from bot.replicas.database import listen_to, make_schema
from bot.storage.roster import Roster, dumps, loads

log = structlog.get_logger(__name__)
CHANNEL = "mnemo_roster"
T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS mnemo_roster (
    id      smallint PRIMARY KEY CHECK (id = 1),
    body    text NOT NULL,
    version bigint NOT NULL
);
"""


class PgRoster:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool
        self._cached = Roster()
        self._version = -1  # of the row `_cached` holds; -1: none read yet
        self._closing = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None

    def current(self) -> Roster:
        return self._cached

    async def change(self, edit: Callable[[Roster], tuple[Roster, T]]) -> T:
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO mnemo_roster VALUES (1, %s, 0) ON CONFLICT DO NOTHING",
                (dumps(Roster()),),
            )
            cursor = await conn.execute(
                "SELECT body, version FROM mnemo_roster WHERE id = 1 FOR UPDATE"
            )
            row = await cursor.fetchone()
            assert row is not None  # inserted above when missing
            roster, version = _parsed(row[0]), int(row[1])
            changed, answer = edit(roster)
            if changed != roster:
                cursor = await conn.execute(
                    "UPDATE mnemo_roster SET body = %s, version = version + 1 WHERE id = 1 "
                    "RETURNING version",
                    (dumps(changed),),
                )
                bumped = await cursor.fetchone()
                assert bumped is not None
                version = int(bumped[0])
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(version)))
        self._remember(changed, version)
        return answer

    async def load(self) -> Roster:
        """Make the table if it is missing, then `refresh`."""
        async with self.pool.connection() as conn, conn.transaction():
            await make_schema(conn, SCHEMA)
        return await self.refresh()

    async def refresh(self) -> Roster:
        """Read the row now; the roster it holds."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute("SELECT body, version FROM mnemo_roster WHERE id = 1")
            row = await cursor.fetchone()
        if row is None:
            self._remember(Roster(), 0)
        else:
            try:
                self._remember(_parsed(row[0]), int(row[1]))
            except StorageError as exc:
                log.warning("roster_unreadable", reason=str(exc))
                self._remember(Roster(), int(row[1]))
        return self._cached

    # ------------------------------------------------------------------ the service

    async def start(self) -> None:
        """Read the roster, then follow the other replicas' changes until `stop`."""
        await self.load()
        self._closing.clear()
        self._listener = asyncio.create_task(self._listen(), name="roster-listener")

    async def stop(self) -> None:
        self._closing.set()
        listener, self._listener = self._listener, None
        if listener is not None:
            await asyncio.wait({listener})

    async def _listen(self) -> None:
        """Until `stop`: read the row again at each notification, and after each reconnect (a
        change made while nobody listened)."""
        await listen_to(
            self.pool,
            CHANNEL,
            lambda _: self.refresh(),
            closing=self._closing,
            failed="roster_listen_failed",
            errors=(PsycopgError, OSError),
            connected=self.refresh,
        )

    def _remember(self, roster: Roster, version: int) -> None:
        if version >= self._version:  # a slower read of an older row never wins
            self._cached, self._version = roster, version


def _parsed(body: str) -> Roster:
    try:
        return loads(body)
    except (ValueError, KeyError, TypeError) as exc:
        raise StorageError(
            f"the roster in the database cannot be read ({str(exc)[:100]}): fix the row of "
            "mnemo_roster, or delete it to start over (claimed owners and paired users are "
            "then forgotten)"
        ) from exc
