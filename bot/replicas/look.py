"""`JobsLook`: what `/status` says about the chats' queue, read from procrastinate's jobs table,
so it is the cluster's, not the replica's that was asked (`bot.turn.commands.status.QueueLook`).

A `/status` is answered in its chat's turn, as a job of the queue: that job is `doing` while the
look is taken, and is not counted among the messages being answered. Replicas alive are the
workers whose heartbeat is newer than `alive_within` seconds.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import structlog
from psycopg import Error as PsycopgError
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bot.turn.commands.status import Queued

log = structlog.get_logger(__name__)

LOOK = """
SELECT count(*) FILTER (WHERE lock = %(chat)s AND status = 'todo'),
       count(*) FILTER (WHERE status = 'doing'),
       count(*) FILTER (WHERE status = 'todo'),
       (SELECT count(*) FROM procrastinate_workers
         WHERE last_heartbeat > now() - make_interval(secs => %(alive)s)),
       count(*) FILTER (WHERE lock = %(chat)s AND status = 'doing')
FROM procrastinate_jobs WHERE status IN ('todo', 'doing')
"""


@dataclass(eq=False)
class JobsLook:
    pool: AsyncConnectionPool
    _: KW_ONLY
    alive_within: float

    async def look(self, session_key: str) -> Queued | None:
        try:
            async with self.pool.connection() as conn:
                cursor = await conn.execute(LOOK, {"chat": session_key, "alive": self.alive_within})
                row = await cursor.fetchone()
        except (PsycopgError, PoolTimeout) as exc:
            log.warning("queue_look_failed", error=type(exc).__name__)
            return None
        assert row is not None
        waiting, running, queued, replicas, asking = (int(n) for n in row)
        return Queued(waiting=waiting, running=running - asking, queued=queued, replicas=replicas)
