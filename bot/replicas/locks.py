"""`PgLocks`: per-path locks (`bot.storage.files.Locks`) every replica shares.

`hold(path)` takes `pg_advisory_xact_lock` on a hash of the path inside a transaction of its own,
released at its end (commit or a dropped connection: a replica that dies lets go at once).
Transaction-scoped locks leave PostgreSQL's shared lock table at the end, unlike session ones.
Within a process an asyncio lock per path comes first, so waiters hold no connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from psycopg_pool import AsyncConnectionPool


class PgLocks:
    def __init__(self, pool: AsyncConnectionPool, *, root: Path | None = None) -> None:
        self.pool = pool
        self.root = root  # paths are keyed relative to it: replicas mount the folder anywhere
        self._local: dict[Path, asyncio.Lock] = {}

    @asynccontextmanager
    async def hold(self, path: Path) -> AsyncIterator[None]:
        local = self._local.setdefault(path, asyncio.Lock())
        async with local, self.pool.connection() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self._key(path),)
            )
            yield

    def _key(self, path: Path) -> str:
        if self.root is not None and path.is_relative_to(self.root):
            return f"mnemo:{path.relative_to(self.root).as_posix()}"
        return f"mnemo:{path.as_posix()}"
