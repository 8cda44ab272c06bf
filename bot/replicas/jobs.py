"""`FencedJobs`: procrastinate's job manager, whose end-of-job writes hold only for the run that
holds the job.

A job's `attempts` grows each time it is put back in the queue (by the sweep, when its worker
stopped beating, or by its worker, to try again). A worker that was frozen past the heartbeat
wakes up holding the job as it fetched it, while the sweep has put it back and another replica
runs it now: if its end of the job (finished, or put back to try again) were written, the
successor's job would end under it and the chat's next message would start early. Here each
such write first locks the job's row and checks that it is still `doing` with the attempts the
writer fetched it with; otherwise nothing is written (`stale` logged). The lock keeps the sweep
from putting the job back between the look and the write.

A worker that stops gives its running jobs their grace only after procrastinate stopped its
heartbeat: `beat` goes on beating for the replica's workers (`workers`, registered and not yet
gone) meanwhile, or the sweep would give those jobs away while they are still running.

A database restart does not stop the worker either (procrastinate stops it when its heartbeat,
its listener or a fetch fails): while the database is away the heartbeat is skipped, a fetch
finds nothing, the listener listens again, and a job's end waits for it to come back.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import structlog
from procrastinate import BaseConnector, utils
from procrastinate.exceptions import ConnectorException
from procrastinate.jobs import Job, Status
from procrastinate.manager import JobManager, NotificationCallback
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from bot.replicas.database import AWAY, OUTAGES, is_away, through_outage

log = structlog.get_logger(__name__)
LISTEN_AGAIN = 0.5  # seconds before the job listener tries the database again


class FencedJobs(JobManager):
    def __init__(self, connector: BaseConnector, pool: AsyncConnectionPool) -> None:
        super().__init__(connector)
        self.pool = pool
        self.workers: set[int] = set()  # this replica's, registered and not yet unregistered

    async def register_worker(self) -> int:
        worker = await super().register_worker()
        self.workers.add(worker)
        return worker

    async def unregister_worker(self, worker_id: int) -> None:
        self.workers.discard(worker_id)
        await super().unregister_worker(worker_id)

    async def beat(self) -> None:
        """A heartbeat for each of this replica's workers."""
        for worker in list(self.workers):
            await self.update_heartbeat(worker)

    async def update_heartbeat(self, worker_id: int) -> None:
        try:
            await super().update_heartbeat(worker_id)
        except (ConnectorException, *AWAY) as exc:
            if not is_away(exc):
                raise
            OUTAGES.away("queue_heartbeat", exc)

    async def fetch_job(self, queues: Iterable[str] | None, worker_id: int) -> Job | None:
        try:
            return await super().fetch_job(queues, worker_id)
        except (ConnectorException, *AWAY) as exc:
            if not is_away(exc):
                raise
            return None

    async def list_jobs_to_abort_async(self, queue: str | None = None) -> Iterable[int]:
        """None while the database is away (procrastinate would log each poll as an error)."""
        try:
            return await super().list_jobs_to_abort_async(queue)
        except (ConnectorException, *AWAY) as exc:
            if not is_away(exc):
                raise
            return []

    async def listen_for_jobs(
        self, *, on_notification: NotificationCallback, queues: Iterable[str] | None = None
    ) -> None:
        while True:
            try:
                await super().listen_for_jobs(on_notification=on_notification, queues=queues)
            except (ConnectorException, *AWAY) as exc:
                if not is_away(exc):
                    raise
                await asyncio.sleep(LISTEN_AGAIN)

    async def finish_job(self, job: Job, status: Status, delete_job: bool) -> None:
        await through_outage(lambda: self._finish(job, status, delete_job), "finish_job")

    async def _finish(self, job: Job, status: Status, delete_job: bool) -> None:
        async with self._held(job, "finish") as conn:
            if conn is not None:
                await conn.execute(
                    "SELECT procrastinate_finish_job_v1(%s, %s, %s)",
                    (job.id, status.value, delete_job),
                )

    async def retry_job(
        self,
        job: Job,
        retry_at: datetime.datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        lock: str | None = None,
    ) -> None:
        async def retry() -> None:
            async with self._held(job, "retry") as conn:
                if conn is not None:
                    await conn.execute(
                        "SELECT procrastinate_retry_job_v2(%s, %s, %s, %s, %s)",
                        (job.id, retry_at or utils.utcnow(), priority, queue, lock),
                    )

        await through_outage(retry, "retry_job")

    @asynccontextmanager
    async def _held(self, job: Job, write: str) -> AsyncIterator[AsyncConnection[Any] | None]:
        """A connection in a transaction holding the job's row, or None when the job is no
        longer this run's (put back since, or ended)."""
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(
                "SELECT 1 FROM procrastinate_jobs"
                " WHERE id = %s AND status = 'doing' AND attempts = %s FOR UPDATE",
                (job.id, job.attempts),
            )
            if await cursor.fetchone() is None:
                log.warning("queue_job_stale", job=job.id, write=write, attempts=job.attempts)
                yield None
            else:
                yield conn
