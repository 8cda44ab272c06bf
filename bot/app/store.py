"""Where the journal, the chats' queue, the path locks and the documents live, picked once from
`settings.store`: the workspace's files and one process's memory (the default), or PostgreSQL
shared by every replica (`bot.replicas`, imported only then: the embedded mode needs none of
its packages)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field

from bot.background import Service
from bot.channels.telegram.budget import Pace
from bot.settings import Settings
from bot.storage.files import ON_DISK, Documents, FileLocks, Locks
from bot.storage.inbox import Inbox, Journal
from bot.storage.roster import RosterFile, RosterStore
from bot.storage.workspace import Workspace
from bot.turn.commands.status import QueueLook
from bot.turn.intake import IntakeFactory, MemoryIntake


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
        return Store(
            journal=Inbox(workspace.inbox_dir), intake=MemoryIntake, locks=locks, roster=roster
        )
    return _shared(settings, workspace, settings.store.url.get_secret_value())


def _shared(settings: Settings, workspace: Workspace, url: str) -> Store:
    from bot.replicas.replica import Replica, open_cluster

    config, telegram = settings.store, settings.telegram
    cluster = open_cluster(
        url,
        workspace.root,
        Replica.from_settings(telegram),
        concurrency=config.worker_concurrency,
        heartbeat=config.heartbeat,
        stalled_after=config.stalled_after,
        grace=telegram.shutdown_grace,
    )
    return Store(
        journal=cluster.journal,
        intake=cluster.intake,
        locks=cluster.locks,
        roster=cluster.roster,
        services=cluster.services,
        pace=cluster.pace,
        queue=cluster.look,
        once=cluster.once,
        documents=cluster.documents,
    )


@contextmanager
def stored_workspace(settings: Settings) -> Iterator[Workspace]:
    """The workspace with its documents where `settings.store` keeps them, for a command run
    beside the bot (`python -m bot memory export | import | edit`)."""
    workspace = Workspace(settings.workspace)
    if settings.store.url is None:
        yield workspace
        return
    from bot.replicas.replica import shared_documents, split

    shared = shared_documents(settings.store.url.get_secret_value(), workspace.root)
    try:
        yield Workspace(workspace.root, split(shared, workspace.root))
    finally:
        shared.close()


@asynccontextmanager
async def roster_only(settings: Settings, workspace: Workspace) -> AsyncIterator[RosterStore]:
    """The roster alone, read and ready, for a command run from a shell (`pair`)."""
    if settings.store.url is None:
        yield RosterFile(workspace.roster_path, FileLocks(workspace.locks_dir))
        return
    from bot.replicas.replica import roster_only as shared_roster

    async with shared_roster(settings.store.url.get_secret_value()) as roster:
        yield roster
