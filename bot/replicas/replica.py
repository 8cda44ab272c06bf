"""This replica in the cluster: who it is (`Replica`, as `mnemo_replicas` records it) and its
connection to the shared database (`Shared`, the service opened before anything else starts:
the pool, the schema, the chats' queue; closed after everything stopped)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from psycopg_pool import AsyncConnectionPool

from bot.replicas.database import migrate, record_replica
from bot.replicas.documents import PgDocuments
from bot.replicas.queue import ChatQueue


@dataclass(frozen=True)
class Replica:
    """Who this replica is in `mnemo_replicas` (`python -m bot doctor` compares secrets)."""

    name: str  # the host and the webhook port
    secret: str | None  # the webhook secret (only its digest is recorded)


@dataclass(eq=False)
class Shared:
    """The replica's connection to the shared database: opened (and the schema made) before
    anything else starts, closed after everything stopped."""

    pool: AsyncConnectionPool
    queue: ChatQueue
    documents: PgDocuments | None = None
    replica: Replica | None = None

    async def start(self) -> None:
        await self.pool.open(wait=True)
        await migrate(self.pool)
        await self.queue.open()
        if self.replica is not None:
            await record_replica(self.pool, self.replica.name, self.replica.secret)

    async def stop(self) -> None:
        await self.pool.close()
        if self.documents is not None:
            await asyncio.to_thread(self.documents.close)
