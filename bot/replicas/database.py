"""The shared database: one connection pool per replica, and the schema made once.

`mnemo_inbox` is the journal and the outbound ledger: one row per accepted message, keyed by its
id (a Telegram update id), `seq` its arrival order across replicas. A row is never deleted when
its message is answered: `done_at` is set and the row stays as a tombstone, so a delivery
Telegram repeats (it does for up to a day when an answer came late) is recognised. `prune` drops
the tombstones older than that.

`fence` counts the workers that took the row: each write says which one it is, and a worker
that was given up as stalled finds its writes refused (`bot.storage.inbox.Fenced`).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from procrastinate import App, PsycopgConnector
from psycopg_pool import AsyncConnectionPool

SCHEMA_LOCK = 0x6D6E656D6F  # "mnemo": one replica makes the schema at a time
KEEP_DONE = timedelta(hours=25)  # Telegram keeps retrying an update for up to 24 h

SCHEMA = """
CREATE TABLE IF NOT EXISTS mnemo_inbox (
    id          text PRIMARY KEY,
    seq         bigserial NOT NULL,
    channel     text NOT NULL,
    session_key text NOT NULL,
    inbound     jsonb NOT NULL,
    reply       text,
    sent        integer NOT NULL DEFAULT 0,
    fence       integer NOT NULL DEFAULT 0,
    absorbed    text[] NOT NULL DEFAULT '{}',
    accepted_at timestamptz NOT NULL DEFAULT now(),
    done_at     timestamptz
);
CREATE INDEX IF NOT EXISTS mnemo_inbox_open ON mnemo_inbox (seq) WHERE done_at IS NULL;
CREATE INDEX IF NOT EXISTS mnemo_inbox_done ON mnemo_inbox (done_at) WHERE done_at IS NOT NULL;
"""


def stop_if_cancelled() -> None:
    """Raise `CancelledError` in a retry loop's task that was asked to stop: psycopg and
    procrastinate may turn a cancellation that reached them mid-query into an error of their
    own, and the loop would otherwise retry for ever (`close` would wait on it)."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def until(event: asyncio.Event, seconds: float) -> None:
    """Wait `seconds`, less if `event` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()


WAIT_FOR_CONNECTION = 3.0  # seconds; then the request fails (a webhook answers 500)


def open_pool(url: str, *, max_size: int = 10) -> AsyncConnectionPool:
    """A pool over `url` (opened by `await pool.open()`); connections are checked when taken,
    so a database restart costs the requests under way, not the replica. A block that takes a
    connection is committed at its end (rolled back if it raised)."""
    return AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        timeout=WAIT_FOR_CONNECTION,
        open=False,
        check=AsyncConnectionPool.check_connection,
    )


async def migrate(pool: AsyncConnectionPool) -> None:
    """Make the tables the journal and the queue need, once, whichever replica comes first."""
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        await conn.execute(SCHEMA)
        row = await (await conn.execute("SELECT to_regclass('procrastinate_jobs')")).fetchone()
        if row is None or row[0] is None:
            schema = App(connector=PsycopgConnector()).schema_manager.get_schema()
            await conn.execute(schema.encode())  # procrastinate's own SQL


async def prune(pool: AsyncConnectionPool, older_than: timedelta = KEEP_DONE) -> int:
    """Drop the tombstones of messages answered longer ago than `older_than`."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "DELETE FROM mnemo_inbox WHERE done_at < now() - %s", (older_than,)
        )
        return cursor.rowcount
