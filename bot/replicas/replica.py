"""This replica in the cluster: who it is (`Replica`, as `mnemo_replicas` records it), its
connection to the shared database (`Shared`, the service opened before anything else starts:
the pool, the schema, the chats' queue; closed after everything stopped), and what it opens of
the cluster at one database URL (`open_cluster`: the queue and the journal over it, the path
locks, the roster, the documents every replica shares — connected at once: stores read them as
they are built —, Telegram's shared pace, the queue's look for `/status`, the runner of work one
replica at a time does; or the documents or the roster alone, for a command). The composition
root picks this or the one-process store (`bot.app.store`) and imports it only then."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from psycopg_pool import AsyncConnectionPool

from bot.background import Service
from bot.replicas.database import migrate, open_pool, record_replica
from bot.replicas.documents import PgDocuments, open_documents
from bot.replicas.journal import PgJournal
from bot.replicas.locks import PgLocks
from bot.replicas.look import JobsLook
from bot.replicas.once import OnceInCluster
from bot.replicas.pace import SharedPace
from bot.replicas.queue import ChatQueue, QueueIntake
from bot.replicas.roster import PgRoster
from bot.replicas.shared_documents import SplitDocuments
from bot.settings import TelegramSettings
from bot.storage.files import ON_DISK, Documents
from bot.turn.intake import IntakeFactory


@dataclass(frozen=True)
class Replica:
    """Who this replica is in `mnemo_replicas` (`python -m bot doctor` compares secrets)."""

    name: str  # the host and the webhook port
    secret: str | None  # the webhook secret (only its digest is recorded)

    @classmethod
    def from_settings(cls, telegram: TelegramSettings) -> Replica:
        """This host and the port its webhook listens on, as `mnemo_replicas` records it."""
        secret = telegram.webhook_secret.get_secret_value() if telegram.webhook_secret else None
        return cls(f"{socket.gethostname()}:{telegram.webhook_port}", secret)


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


@dataclass(frozen=True)
class Cluster:
    journal: PgJournal
    intake: IntakeFactory  # a channel's, on the queue
    locks: PgLocks
    roster: PgRoster
    services: list[Service]  # the connection (pool, schema, queue) and the roster: first
    pace: SharedPace
    look: JobsLook
    documents: Documents  # the shared ones in the database, the rest on this disk
    pool: AsyncConnectionPool  # what `once` runs its work over

    def once(self, work: Sequence[tuple[str, Service]]) -> list[Service]:
        """The named work, run by one replica at a time however many start it."""
        return [OnceInCluster(self.pool, work)]


def open_cluster(
    url: str,
    root: Path,
    replica: Replica,
    *,
    concurrency: int,
    heartbeat: float,
    stalled_after: float,
    grace: float,
) -> Cluster:
    """The cluster's parts for the workspace at `root`, with `concurrency` chats answered at
    once, their jobs stalled `stalled_after` seconds after the last `heartbeat`; `grace`: the
    seconds a stopping replica gives a turn under way."""
    pool = open_pool(url, max_size=concurrency + 4, stalled_after=stalled_after)
    queue = ChatQueue(
        pool,
        concurrency=concurrency,
        heartbeat=heartbeat,
        stalled_after=stalled_after,
        grace=grace,
    )
    journal = PgJournal(pool, enqueue=queue.enqueue, lease=stalled_after)
    roster = PgRoster(pool)
    shared = shared_documents(url, root, stalled_after=stalled_after)
    return Cluster(
        journal=journal,
        intake=partial(QueueIntake, queue=queue, journal=journal),
        locks=PgLocks(pool, root=root, alive_every=stalled_after / 3),
        roster=roster,
        services=[Shared(pool, queue, shared, replica), roster],
        pace=SharedPace(pool),
        look=JobsLook(pool, alive_within=stalled_after),
        documents=split(shared, root),
        pool=pool,
    )


def split(shared: PgDocuments, root: Path) -> Documents:
    """The workspace's documents: the shared ones in the database, the rest on this disk."""
    return SplitDocuments(shared, ON_DISK, root)


def shared_documents(url: str, root: Path, *, stalled_after: float | None = None) -> PgDocuments:
    """The documents every replica shares, connected now (blocking)."""
    documents = open_documents(url, root, stalled_after=stalled_after)
    documents.connect()
    return documents


@asynccontextmanager
async def roster_only(url: str) -> AsyncIterator[PgRoster]:
    """The roster alone, read and ready, for a command run from a shell (`pair`)."""
    pool = open_pool(url, max_size=2)
    await pool.open(wait=True)
    try:
        roster = PgRoster(pool)
        await roster.load()
        yield roster
    finally:
        await pool.close()
