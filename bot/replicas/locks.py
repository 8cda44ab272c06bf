"""`PgLocks`: per-path locks (`bot.storage.files.Locks`) every replica shares.

`hold(path)` takes `pg_advisory_xact_lock` on a hash of the path inside a transaction of its own,
released at its end (commit or a dropped connection: a replica that dies lets go at once).
Transaction-scoped locks leave PostgreSQL's shared lock table at the end, unlike session ones.
Within a process an asyncio lock per path comes first, so waiters hold no connection. Taking
the lock waits for a database that is away (a restart) rather than fail the turn; a connection
lost while the lock was held has let go of it, and is not an error of the block's.

While the block runs, its session says every `alive_every` seconds that it is alive (`SELECT 1`
on the lock's connection): a block may hold a lock across a model call (a consolidation holds
its scope's), and PostgreSQL ends a session left idle in a transaction for the replica's stall
limit (`bot.replicas.database.session_options`). So a replica frozen while it holds a lock lets
go of it within that limit, and a live one keeps it as long as it needs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from bot.replicas.database import AWAY, through_outage

ALIVE_EVERY = 3.0  # seconds between two signs of life of a session holding a lock


class PgLocks:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        *,
        root: Path | None = None,
        alive_every: float = ALIVE_EVERY,
    ) -> None:
        self.pool = pool
        self.root = root  # paths are keyed relative to it: replicas mount the folder anywhere
        self.alive_every = alive_every
        self._local: dict[Path, asyncio.Lock] = {}

    @asynccontextmanager
    async def hold(self, path: Path) -> AsyncIterator[None]:
        local = self._local.setdefault(path, asyncio.Lock())
        async with local:
            held, conn = await through_outage(lambda: self._take(self._key(path)), "lock")
            alive = asyncio.create_task(self._alive(conn), name="lock alive")
            try:
                yield
            finally:
                alive.cancel()
                await asyncio.wait([alive])
                with contextlib.suppress(*AWAY):  # the lock went with the connection
                    await held.aclose()

    async def _alive(self, conn: AsyncConnection[Any]) -> None:
        """Keep the lock's session from idling in its transaction, until cancelled."""
        with contextlib.suppress(*AWAY):  # gone: the lock with it (the block's writes say so)
            while True:
                await asyncio.sleep(self.alive_every)
                await conn.execute("SELECT 1")

    async def _take(self, key: str) -> tuple[AsyncExitStack, AsyncConnection[Any]]:
        """A connection in a transaction holding the advisory lock on `key`, to close."""
        held = AsyncExitStack()
        try:
            conn = await held.enter_async_context(self.pool.connection())
            await held.enter_async_context(conn.transaction())
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))
        except BaseException:
            with contextlib.suppress(*AWAY):
                await held.aclose()
            raise
        return held, conn

    def _key(self, path: Path) -> str:
        if self.root is not None and path.is_relative_to(self.root):
            return f"mnemo:{path.relative_to(self.root).as_posix()}"
        return f"mnemo:{path.as_posix()}"
