"""The shared database: one connection pool per replica, and the schema made once.

`mnemo_inbox` is the journal and the outbound ledger: one row per accepted message, keyed by its
id (a Telegram update id), `seq` its arrival order across replicas. A row is never deleted when
its message is answered: `done_at` is set and the row stays as a tombstone, so a delivery
Telegram repeats (it does for up to a day when an answer came late) is recognised. `prune` drops
the tombstones older than that.

`fence` counts the workers that took the row: each write says which one it is, and a worker
that was given up as stalled finds its writes refused (`bot.storage.inbox.Fenced`);
`lease_until` is how long the last take holds it for sure (`bot.replicas.lease`).

`mnemo_replicas` has a row per replica started (`record_replica`: its name, a digest of its
webhook secret, when it started), so `python -m bot doctor` can tell replicas that were given
different secrets.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TypedDict, TypeVar

import structlog
from procrastinate import App, PsycopgConnector
from psycopg import AsyncConnection, OperationalError
from psycopg import Error as PsycopgError
from psycopg.errors import IdleInTransactionSessionTimeout
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bot.errors import StoreAway

log = structlog.get_logger(__name__)
T = TypeVar("T")

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
ALTER TABLE mnemo_inbox ADD COLUMN IF NOT EXISTS lease_until timestamptz;
CREATE TABLE IF NOT EXISTS mnemo_replicas (
    name       text PRIMARY KEY,
    secret     text,
    started_at timestamptz NOT NULL DEFAULT now()
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


RETRY = 1.0  # seconds before listening again after the connection was lost
LOOK_EVERY = 0.5  # seconds between two looks at whether the listening should end


async def listen_to(
    pool: AsyncConnectionPool,
    channel: str,
    heard: Callable[[str], Awaitable[object]],
    *,
    closing: asyncio.Event,
    failed: str,  # what `met` logs when the listening breaks
    errors: tuple[type[Exception], ...],  # those that break it: it listens again
    connected: Callable[[], Awaitable[object]] | None = None,  # after each LISTEN
) -> None:
    """Until `closing` is set: `heard` each notification's payload on `channel`, on a
    connection of its own (it stays listening), again `RETRY` seconds after the listening broke.
    It ends between two waits (within `LOOK_EVERY` seconds), never by a cancellation mid-query
    (psycopg then cancels the query on the server and may wait seconds for it)."""
    while not closing.is_set():
        try:
            conninfo = pool.conninfo
            assert isinstance(conninfo, str)  # `open_pool` makes it so
            async with await AsyncConnection.connect(conninfo, autocommit=True) as conn:
                await conn.execute(f"LISTEN {channel}")
                if connected is not None:
                    await connected()
                while not closing.is_set():
                    async for note in conn.notifies(timeout=LOOK_EVERY):
                        await heard(note.payload)
        except errors as exc:
            stop_if_cancelled()
            met(failed, exc)
            await until(closing, RETRY)


WAIT_FOR_CONNECTION = 3.0  # seconds; then the call fails (`PoolTimeout`: a webhook answers 500)
OUTAGE = 60.0  # seconds a turn's own write waits for the database to come back
# the database unreachable (restarting, network), or our session ended by it (idle too long in a
# transaction: `session_options`)
AWAY = (OperationalError, PoolTimeout, IdleInTransactionSessionTimeout)


class OutageLog:
    """What a replica logs of the database going away, which it rides out (writes wait and are
    tried again, webhooks answer 500 so Telegram delivers again, listeners and workers connect
    again): one WARNING when it goes, saying so, and one INFO when it is back; the pieces that
    met it meanwhile log nothing more (`away`: at DEBUG)."""

    def __init__(self) -> None:
        self.since: float | None = None  # monotonic: when it went, None while it is there

    def away(self, where: str, exc: BaseException) -> None:
        if self.since is not None:
            log.debug("database_still_away", where=where, error=type(exc).__name__)
            return
        self.since = time.monotonic()
        log.warning(
            "database_away",
            where=where,
            error=type(exc).__name__,
            handled="turns wait and go on, webhooks answer 500 and Telegram sends them again",
        )

    def back(self) -> None:
        if self.since is not None:
            log.info("database_back", away_s=round(time.monotonic() - self.since, 1))
            self.since = None


OUTAGES = OutageLog()  # the replica's one account of the database's outages


def is_away(exc: BaseException) -> bool:
    """Whether `exc` says the database is unreachable (procrastinate wraps psycopg's errors)."""
    return isinstance(exc, AWAY) or isinstance(exc.__cause__, AWAY)


def met(where: str, exc: BaseException) -> None:
    """A background piece (a listener, the sweep, a heartbeat) met `exc` and goes on at its
    next round: an outage is told once (`OUTAGES`), anything else as a warning."""
    if is_away(exc):
        OUTAGES.away(where, exc)
    else:
        log.warning(where, error=type(exc).__name__)


async def through_outage(write: Callable[[], Awaitable[T]], what: str) -> T:
    """`write()`, tried again while the database is away (up to `OUTAGE` seconds): a turn
    under way keeps its reply and its record of a part sent, rather than making it or sending
    it again once the database is back. Any other error, or the outage outlasting that, is
    raised."""
    deadline = asyncio.get_running_loop().time() + OUTAGE
    wait = 0.1
    while True:
        try:
            done = await write()
        except AWAY as exc:
            stop_if_cancelled()
            if asyncio.get_running_loop().time() + wait > deadline:
                raise
            OUTAGES.away(what, exc)
        else:
            OUTAGES.back()
            return done
        await asyncio.sleep(wait)
        wait = min(1.0, wait * 2)


def open_pool(
    url: str, *, max_size: int = 10, stalled_after: float | None = None
) -> AsyncConnectionPool:
    """A pool over `url` (opened by `await pool.open()`); connections are checked when taken,
    so a database restart costs the requests under way, not the replica. A block that takes a
    connection is committed at its end (rolled back if it raised). With `stalled_after`, a
    session left idle in a transaction that long is ended by PostgreSQL (`session_options`)."""
    return AsyncConnectionPool(
        url,
        check=AsyncConnectionPool.check_connection,
        **pool_options(max_size=max_size, stalled_after=stalled_after),
    )


class PoolOptions(TypedDict):
    min_size: int
    max_size: int
    timeout: float
    open: bool
    kwargs: dict[str, str]


def pool_options(*, max_size: int, stalled_after: float | None) -> PoolOptions:
    """What a replica's pools are opened with, async (`open_pool`) or not
    (`bot.replicas.documents`): one connection kept, `max_size` at most, a caller waits
    `WAIT_FOR_CONNECTION` for one, opened by `open()`, sessions as `session_options` says."""
    return PoolOptions(
        min_size=1,
        max_size=max_size,
        timeout=WAIT_FOR_CONNECTION,
        open=False,
        kwargs=session_options(stalled_after),
    )


def session_options(stalled_after: float | None) -> dict[str, str]:
    """The connection options of a replica's sessions: one idle in a transaction for
    `stalled_after` seconds is ended by PostgreSQL (its locks go with it), so a replica frozen
    mid-transaction holds no row or lock another replica waits for past the stall limit. A live
    replica is never that long between two statements of a transaction: a lock held across
    other work (`bot.replicas.locks`) keeps its session busy meanwhile."""
    if stalled_after is None:
        return {}
    return {"options": f"-c idle_in_transaction_session_timeout={int(stalled_after * 1000)}"}


async def make_schema(conn: AsyncConnection, schema: str) -> None:
    """Run `schema` (`CREATE … IF NOT EXISTS`) in `conn`'s transaction, one replica at a time
    (`SCHEMA_LOCK`, released at the transaction's end)."""
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
    await conn.execute(schema)


async def migrate(pool: AsyncConnectionPool) -> None:
    """Make the tables the journal and the queue need, once, whichever replica comes first."""
    async with pool.connection() as conn, conn.transaction():
        await make_schema(conn, SCHEMA)
        row = await (await conn.execute("SELECT to_regclass('procrastinate_jobs')")).fetchone()
        if row is None or row[0] is None:
            schema = App(connector=PsycopgConnector()).schema_manager.get_schema()
            await conn.execute(schema.encode())  # procrastinate's own SQL


def secret_digest(secret: str) -> str:
    """What a replica records of its webhook secret: enough to tell two secrets apart, nothing
    to send Telegram's header with."""
    return hashlib.sha256(f"mnemo-webhook-secret:{secret}".encode()).hexdigest()[:16]


async def record_replica(pool: AsyncConnectionPool, name: str, secret: str | None) -> None:
    """This replica started, with this webhook secret (`secret_digest`; None: no webhook)."""
    digest = None if secret is None else secret_digest(secret)
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO mnemo_replicas (name, secret) VALUES (%s, %s) ON CONFLICT (name)"
            " DO UPDATE SET secret = EXCLUDED.secret, started_at = now()",
            (name, digest),
        )


ABOUT = """
SELECT current_setting('server_version'), current_database(), current_user,
       has_database_privilege(current_database(), 'CREATE'),
       has_schema_privilege('public', 'CREATE'), to_regclass('mnemo_replicas') IS NOT NULL
"""


@dataclass(frozen=True)
class About:
    """What `python -m bot doctor` tells of the database."""

    version: str
    database: str
    user: str
    can_create: bool  # schemas, in the database
    can_make_tables: bool  # in schema public
    made: bool  # the tables are there
    secrets: dict[str, str | None]  # each replica recorded: its webhook secret's digest


async def about(url: str) -> About:
    """Connect to `url` and look; `StoreAway` with the server's first line when it cannot."""
    try:
        async with await AsyncConnection.connect(url, autocommit=True) as conn:
            row = await (await conn.execute(ABOUT)).fetchone()
            assert row is not None
            secrets: dict[str, str | None] = {}
            if row[5]:
                cursor = await conn.execute("SELECT name, secret FROM mnemo_replicas ORDER BY 1")
                secrets = {str(name): secret for name, secret in await cursor.fetchall()}
    except (PsycopgError, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise StoreAway(first) from exc
    version, database, user, can_create, can_make_tables, made = row
    return About(
        str(version),
        str(database),
        str(user),
        bool(can_create),
        bool(can_make_tables),
        bool(made),
        secrets,
    )


async def prune(pool: AsyncConnectionPool, older_than: timedelta = KEEP_DONE) -> int:
    """Drop the tombstones of messages answered longer ago than `older_than`."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "DELETE FROM mnemo_inbox WHERE done_at < now() - %s", (older_than,)
        )
        return cursor.rowcount
