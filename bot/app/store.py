"""Where the journal, the chats' queue, the path locks and the documents live, picked once from
`settings.store`: the workspace's files and one process's memory (the default), or PostgreSQL
shared by every replica (`bot.replicas`, imported only then: the embedded mode needs none of
its packages)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from bot.background import Service
from bot.channels.telegram.budget import Pace
from bot.settings import Settings
from bot.storage.files import ON_DISK, Documents, FileLocks, Locks
from bot.storage.inbox import Inbox, Journal
from bot.storage.roster import RosterFile, RosterStore
from bot.storage.workspace import Workspace
from bot.turn.commands.status import QueueLook
from bot.turn.intake import IntakeFactory, MemoryIntake

if TYPE_CHECKING:
    from bot.replicas.documents import PgDocuments
    from bot.replicas.replica import Replica


@dataclass
class Store:
    journal: Journal
    intake: IntakeFactory
    locks: Locks
    roster: RosterStore  # owners, paired users, the claim code (`bot.storage.roster`)
    services: list[Service] = field(default_factory=list)  # started first, stopped last
    pace: Pace | None = None  # Telegram's send rate shared by the replicas (None: one process)
    queue: QueueLook | None = None  # /status: the chats' queue shared by the replicas
    # the services for work (each named) that must run once however many replicas run it
    once: Callable[[Sequence[tuple[str, Service]]], list[Service]] = field(
        default=lambda work: [service for _, service in work]  # one process: the work itself
    )
    documents: Documents = ON_DISK  # the workspace's files (`Workspace.documents`)


def build_store(settings: Settings, workspace: Workspace) -> Store:
    if settings.store.url is None:
        locks = FileLocks(workspace.locks_dir)
        roster = RosterFile(workspace.roster_path, locks)
        return Store(Inbox(workspace.inbox_dir), MemoryIntake, locks, roster)
    return _shared(settings, workspace, settings.store.url.get_secret_value())


def _shared(settings: Settings, workspace: Workspace, url: str) -> Store:
    from bot.replicas.database import open_pool
    from bot.replicas.journal import PgJournal
    from bot.replicas.locks import PgLocks
    from bot.replicas.look import JobsLook
    from bot.replicas.pace import SharedPace
    from bot.replicas.queue import ChatQueue, QueueIntake
    from bot.replicas.replica import Shared
    from bot.replicas.roster import PgRoster

    store = settings.store
    pool = open_pool(url, max_size=store.worker_concurrency + 4, stalled_after=store.stalled_after)
    queue = ChatQueue(
        pool,
        concurrency=store.worker_concurrency,
        heartbeat=store.heartbeat,
        stalled_after=store.stalled_after,
        grace=settings.telegram.shutdown_grace,
    )
    journal = PgJournal(pool, enqueue=queue.enqueue, lease=store.stalled_after)

    intake = partial(QueueIntake, queue=queue, journal=journal)  # a channel's, on the queue

    locks = PgLocks(pool, root=workspace.root, alive_every=store.stalled_after / 3)
    roster = PgRoster(pool)

    def once(work: Sequence[tuple[str, Service]]) -> list[Service]:
        from bot.replicas.once import OnceInCluster

        return [OnceInCluster(pool, work)]

    shared = shared_documents(url, workspace, stalled_after=store.stalled_after)
    services: list[Service] = [Shared(pool, queue, shared, _replica(settings)), roster]
    look, documents = JobsLook(pool, alive_within=store.stalled_after), split(shared, workspace)
    return Store(journal, intake, locks, roster, services, SharedPace(pool), look, once, documents)


def _replica(settings: Settings) -> Replica:
    """This replica as `mnemo_replicas` records it: the host and port, and its secret."""
    telegram = settings.telegram
    secret = telegram.webhook_secret.get_secret_value() if telegram.webhook_secret else None
    from bot.replicas.replica import Replica

    return Replica(f"{socket.gethostname()}:{telegram.webhook_port}", secret)


@contextmanager
def stored_workspace(settings: Settings) -> Iterator[Workspace]:
    """The workspace with its documents where `settings.store` keeps them, for a command run
    beside the bot (`python -m bot memory export | import | edit`)."""
    workspace = Workspace(settings.workspace)
    if settings.store.url is None:
        yield workspace
        return
    shared = shared_documents(settings.store.url.get_secret_value(), workspace)
    try:
        yield Workspace(workspace.root, split(shared, workspace))
    finally:
        shared.close()


def split(shared: PgDocuments, workspace: Workspace) -> Documents:
    """The workspace's documents: the shared ones in the database, the rest on this disk."""
    from bot.replicas.shared_documents import SplitDocuments

    return SplitDocuments(shared, ON_DISK, workspace.root)


def shared_documents(
    url: str, workspace: Workspace, *, stalled_after: float | None = None
) -> PgDocuments:
    """The documents every replica shares, connected now (blocking): stores read them as they
    are built, before the services start."""
    from bot.replicas.documents import open_documents

    documents = open_documents(url, workspace.root, stalled_after=stalled_after)
    documents.connect()
    return documents


@asynccontextmanager
async def roster_only(settings: Settings, workspace: Workspace) -> AsyncIterator[RosterStore]:
    """The roster alone, read and ready, for a command run from a shell (`pair`)."""
    if settings.store.url is None:
        yield RosterFile(workspace.roster_path, FileLocks(workspace.locks_dir))
        return
    from bot.replicas.database import open_pool
    from bot.replicas.roster import PgRoster

    pool = open_pool(settings.store.url.get_secret_value(), max_size=2)
    await pool.open(wait=True)
    try:
        roster = PgRoster(pool)
        await roster.load()
        yield roster
    finally:
        await pool.close()
