"""`OnceInCluster`: background work that one replica at a time runs (the daily upkeep, the undo
purge, reminders firing), however many replicas start it.

Each piece of work has a name and a PostgreSQL session-level advisory lock on it. Every replica
holds one connection of its own and, every `look_every` seconds, tries the locks of the work it
does not run yet (`pg_try_advisory_lock`: never waits); the one that gets a lock starts that
work, and runs it while its connection lives. Work is spread over the replicas in the order they
came. A replica that stops lets go at once (stopping the work, then closing its connection); one
that dies lets go when PostgreSQL sees its connection end; one whose connection breaks stops its
work at its next look. Another replica then takes the work at its next look and starts it, as a
start-up would (the daily upkeep runs once then: it may run twice that day). Between a broken
connection and that look (at most `look_every` seconds) two replicas may run the same work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog
from psycopg import AsyncConnection
from psycopg import Error as PsycopgError
from psycopg_pool import AsyncConnectionPool

from bot.background import Service
from bot.errors import StoreAway
from bot.replicas.database import OUTAGES, is_away, met, stop_if_cancelled, until

log = structlog.get_logger(__name__)
LOOK_EVERY = 2.0  # seconds between two tries at the work this replica does not run
APPLICATION = "mnemo-once"  # the connection's application_name, as pg_stat_activity shows it


class OnceInCluster:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        work: Sequence[tuple[str, Service]],  # each with a name every replica gives it alike
        *,
        look_every: float = LOOK_EVERY,
    ) -> None:
        self.pool = pool
        self.work = list(work)
        self.look_every = look_every
        self._running: list[tuple[str, Service]] = []  # started here, in that order
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def running(self) -> list[str]:
        """The names of the work this replica runs now."""
        return [name for name, _ in self._running]

    async def start(self) -> None:
        self._closing.clear()
        self._task = asyncio.create_task(self._lead(), name="once-in-cluster")

    async def stop(self) -> None:
        """Stop the work run here, then let go of it (the next look elsewhere takes it)."""
        self._closing.set()
        task, self._task = self._task, None
        if task is not None:
            await asyncio.wait({task})

    async def _lead(self) -> None:
        while not self._closing.is_set():
            try:
                conninfo = self.pool.conninfo
                assert isinstance(conninfo, str)  # `open_pool` makes it so
                async with await AsyncConnection.connect(
                    conninfo, autocommit=True, application_name=APPLICATION
                ) as conn:
                    while not self._closing.is_set():
                        await self._take(conn)
                        await until(self._closing, self.look_every)
                        await conn.execute("SELECT 1")  # still connected: still the holder
                    await self._stop_running()  # before the locks go with the connection
            except (PsycopgError, OSError) as exc:
                stop_if_cancelled()
                met("once_in_cluster_lost", exc)
                await self._stop_running()
                await until(self._closing, self.look_every)

    async def _take(self, conn: AsyncConnection) -> None:
        """Start each piece of work not run here whose lock is free."""
        held = set(self.running())
        for name, service in self.work:
            if name in held or self._closing.is_set():
                continue
            cursor = await conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (_key(name),)
            )
            row = await cursor.fetchone()
            if row is None or not row[0]:
                continue
            try:
                await service.start()
            except Exception as exc:  # the background boundary: tried again at the next look
                if is_away(exc) or isinstance(exc, StoreAway):  # handled: the next look
                    OUTAGES.away(f"once_in_cluster_start:{name}", exc)
                else:
                    log.exception("once_in_cluster_start_failed", work=name)
                await conn.execute(
                    "SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (_key(name),)
                )
                continue
            log.info("once_in_cluster_runs", work=name)
            self._running.append((name, service))

    async def _stop_running(self) -> None:
        while self._running:
            name, service = self._running.pop()
            try:
                await service.stop()
            except Exception:
                log.exception("once_in_cluster_stop_failed", work=name)


def _key(name: str) -> str:
    return f"mnemo-once:{name}"
