"""`QueueIntake`: the chats' queue shared by every replica (`bot.turn.intake.Intake`).

Each accepted message becomes a procrastinate job `mnemo.answer(update=<id>)` with
`lock=<session key>`, deferred in the journal's own transaction (`ChatQueue.enqueue`, called by
`PgJournal.accept_all`). Jobs sharing a lock run one at a time, oldest first, on whichever
replica's worker fetches them: a chat's messages are answered in order across replicas, other
chats' meanwhile. The job `take`s its entry (fenced to it) and runs `Router.answer`; an entry
already done (a job run again) is skipped.

A turn holds its message under a lease (`bot.replicas.lease`: the fence and the lease,
replicated mode's fencing), which its replica renews every `heartbeat` seconds. A replica that
stops renewing (killed, frozen, cut off from the database) has its running jobs put back in the
queue by the sweep once the lease (`stalled_after` seconds) ran out: every replica sweeps, every
`heartbeat` seconds, and none waits on a row another session holds (it skips it until its next
round), so a frozen replica holding a row in an open transaction holds up nothing but that row,
and PostgreSQL ends such a session after `stalled_after` seconds
(`idle_in_transaction_session_timeout`, `bot.replicas.database.open_pool`). Nor does it sweep
in the first `stalled_after` seconds after the database started: a restart leaves every lease
old. A job put back keeps its id, so its chat's order is kept; the stale worker sends no more
parts (its look, right before each request, and its check at the wire, as the request's bytes
are about to go out), its ledger writes are refused (`Fenced`), and its end of the job is not
written (`bot.replicas.jobs.FencedJobs`): the successor's job stays its own. The sweep also
drops old tombstones.

`close` stops fetching, gives the running turns `grace` seconds (beating for them meanwhile:
`ChatQueue.beating`) and aborts the rest: an aborted job goes back in the queue (same id) for any
replica, its entry still journaled.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from procrastinate import App, PsycopgConnector, RetryStrategy
from procrastinate.exceptions import ConnectorException
from psycopg import AsyncConnection
from psycopg import Error as PsycopgError
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bot.errors import StoreAway
from bot.models import Inbound
from bot.replicas.database import OUTAGES, met, prune, stop_if_cancelled, until
from bot.replicas.jobs import FencedJobs
from bot.replicas.journal import Held, PgJournal, with_follow_ups
from bot.replicas.lease import Lease, Leases, give_away
from bot.replicas.stop import StopAcross
from bot.storage.inbox import Entry, Fenced, LeaseLapsed, looking_first
from bot.turn.commands.handler import parse_command
from bot.turn.delivery import Replier
from bot.turn.door import Reach
from bot.turn.router import Router

log = structlog.get_logger(__name__)
TASK = "mnemo.answer"
FETCH_INTERVAL = 0.2  # seconds between fetches when no notification came (procrastinate: 5)
LOOKS = 3  # tries of a turn's look before its hold is taken for lapsed
CLOSE_SETTLE = 5.0  # seconds past `grace` the worker, the sweep and the /stop listener get to end
PRUNE_EVERY = 600  # sweeps between two prunes of the tombstones
GONE_AFTER = 3600.0  # seconds without a heartbeat after which a worker's row is dropped
SWEEP_WAIT = "200ms"  # the most a sweep's statement waits on a lock (it skips locked rows)


class ChatQueue:
    """The procrastinate app over the replica's pool: defers, runs and sweeps `mnemo.answer`."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        *,
        concurrency: int = 8,
        heartbeat: float = 2.0,
        stalled_after: float = 10.0,
        grace: float = 8.0,  # seconds running turns get at a stop
    ) -> None:
        self.pool = pool
        self.grace = grace
        self.concurrency = concurrency
        self.heartbeat = heartbeat
        self.stalled_after = stalled_after
        self.app = App(connector=PsycopgConnector())
        self.jobs = self.app.job_manager = FencedJobs(self.app.connector, pool)  # before the task
        self.handler: Callable[[str], Awaitable[None]] | None = None
        self.closing = asyncio.Event()  # set by `QueueIntake.close`: the sweep ends
        retry = RetryStrategy(max_attempts=1000, wait=1)  # a database away, a stop: again
        self.app.task(name=TASK, retry=retry)(self._run)

    async def open(self) -> None:
        await self.app.open_async(self.pool)

    async def enqueue(self, conn: AsyncConnection[Any], entry: Entry) -> None:
        """Queue the entry's answer for its chat, in the transaction `conn` is in."""
        deferrer = self.app.configure_task(TASK, lock=entry.inbound.session_key, connection=conn)
        await deferrer.defer_async(update=entry.inbound.id)

    async def work(self) -> None:
        """Run this replica's worker until cancelled (then `grace` seconds for running jobs);
        a worker the database's absence stopped is started again."""
        while True:
            try:
                await self.app.run_worker_async(
                    concurrency=self.concurrency,
                    name="mnemo",
                    fetch_job_polling_interval=FETCH_INTERVAL,
                    update_heartbeat_interval=self.heartbeat,
                    stalled_worker_timeout=self.stalled_after,
                    shutdown_graceful_timeout=self.grace,
                    delete_jobs="successful",
                    install_signal_handlers=False,
                )
                return
            except Exception as exc:  # procrastinate's ConnectorException, psycopg's errors
                stop_if_cancelled()
                met("queue_worker_restarting", exc)
                await asyncio.sleep(self.heartbeat)

    async def beating(self, stopped: asyncio.Event) -> None:
        """Beat for this replica's worker while it stops (`FencedJobs.beat`), until `stopped`."""
        while True:
            await until(stopped, self.heartbeat)
            if stopped.is_set():
                return
            try:
                await self.jobs.beat()
            except (PsycopgError, PoolTimeout, ConnectorException) as exc:  # next beat
                stop_if_cancelled()
                met("queue_beat_failed", exc)

    async def sweep(self) -> int:
        """Put back in the queue the jobs whose lease ran out (`bot.replicas.lease`); how many.
        Any replica may sweep at once: a job is given away under its row's lock, once."""
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = '{SWEEP_WAIT}'")
            if await self._just_started(conn):
                return 0
            return len(await give_away(conn, task=TASK, lease=self.stalled_after))

    async def _just_started(self, conn: AsyncConnection[Any]) -> bool:
        """Whether the database started less than `stalled_after` ago: every worker's last
        beat is then as old as the restart, and each beats again within `heartbeat` seconds;
        sweeping now would give live workers' turns away."""
        cursor = await conn.execute(
            "SELECT now() - pg_postmaster_start_time() < make_interval(secs => %s)",
            (self.stalled_after,),
        )
        row = await cursor.fetchone()
        return bool(row and row[0])

    async def sweeping(self) -> None:
        """Sweep every `heartbeat` seconds until `closing` is set; the tombstones now and then."""
        rounds = 0
        while not self.closing.is_set():
            try:
                await self.sweep()
                OUTAGES.back()  # the database answers (again)
                if rounds % PRUNE_EVERY == 0:
                    await prune(self.pool)
                    await self.app.job_manager.prune_stalled_workers(GONE_AFTER)
            except (PsycopgError, PoolTimeout, ConnectorException) as exc:  # next round
                stop_if_cancelled()
                met("queue_sweep_failed", exc)
            rounds += 1
            await until(self.closing, self.heartbeat)

    async def _run(self, update: str) -> None:
        if self.handler is None:
            raise RuntimeError("no handler: the replica's intake has not started")
        await self.handler(update)


def _queued_by_the_journal(entry: Entry) -> None:
    """The outlet of a replica's channel: a scheduled entry (`bot.reminders.scheduler`) was
    queued with its journaling, in the same transaction (`PgJournal`)."""


class QueueIntake:
    def __init__(
        self,
        router: Router,
        replier_for: Callable[[Inbound], Replier],
        *,
        channel: str,
        reach: Reach | None = None,
        debounce: float = 0.0,  # seconds a turn waits for follow-ups (`journal.with_follow_ups`)
        queue: ChatQueue,
        journal: PgJournal,
    ) -> None:
        self.router = router
        self.replier_for = replier_for
        self.reach = reach
        self.channel = channel
        self.queue = queue
        self.journal = journal
        self.debounce = debounce
        self.stops = StopAcross(queue.pool)
        self.leases = Leases(queue.pool, lease=queue.stalled_after, renew_every=queue.heartbeat)
        self._running = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._worker: asyncio.Task[None] | None = None  # among `_tasks`: the one cancelled
        self._at_once: set[asyncio.Task[None]] = set()

    async def start(self) -> list[Entry]:
        """Start this replica's worker and its share of the sweep. Nothing is replayed here:
        what a stop left is in the queue, for any replica."""
        self.queue.handler = self._answer
        self._worker = asyncio.create_task(self.queue.work(), name="queue worker")
        self._tasks = [
            self._worker,
            asyncio.create_task(self.queue.sweeping(), name="queue sweep"),
            asyncio.create_task(self.stops.listen(self._runs, self._answer_here), name="stops"),
        ]
        self._renewing = asyncio.Event()
        self._renewals = asyncio.create_task(self._renew(self._renewing), name="leases")
        self.router.outlets[self.channel] = _queued_by_the_journal  # reminders may fire now
        return []

    async def receive(self, inbounds: Sequence[Inbound]) -> None:
        """Journal and queue a batch in one transaction (raises when the database is away:
        nothing was confirmed then)."""
        journaled: list[Inbound] = []
        for inbound in inbounds:
            route = self.router.route(inbound)
            if route == "at_once":
                self.aside(self._answer_at_once(inbound))
            elif route == "journal":
                journaled.append(inbound)
        await self.journal.accept_all(journaled)

    def backlog(self) -> int:
        """Turns running on this replica (the queue's backlog is the cluster's)."""
        return self._running

    async def close(self, grace: float) -> None:
        """Stop fetching; the running turns get the queue's grace (the channel's `grace` is
        the same setting), the rest go back in the queue."""
        self.router.outlets.pop(self.channel, None)
        self.queue.closing.set()  # the sweep and the /stop listener end between two waits
        self.stops.close()
        if self._worker is not None:  # procrastinate's: a cancel starts its graceful stop
            self._worker.cancel()
        stopped = asyncio.Event()
        beats = asyncio.create_task(self.queue.beating(stopped), name="queue beats")  # the grace's
        ending = asyncio.gather(*self._tasks, *self._at_once, return_exceptions=True)
        try:
            async with asyncio.timeout(grace + CLOSE_SETTLE):
                await ending
        except TimeoutError:  # a task that ignores its cancellation must not hold the stop
            log.warning(
                "intake_close_timeout", left=[t.get_name() for t in self._tasks if not t.done()]
            )
        finally:
            stopped.set()
            await asyncio.wait([beats], timeout=CLOSE_SETTLE)
        await self.router.delivery.settle()
        self._renewing.set()  # the holds last until the last part went
        await asyncio.wait([self._renewals], timeout=CLOSE_SETTLE)
        log.info("intake_closed", running=self._running)

    async def _renew(self, stopped: asyncio.Event) -> None:
        """Renew the holds of the turns running here every `heartbeat` seconds, until
        `stopped`."""
        while not stopped.is_set():
            try:
                await self.leases.renew()
            except (PsycopgError, PoolTimeout) as exc:  # the next round, or the turns' looks
                stop_if_cancelled()
                met("queue_leases_not_renewed", exc)
            await until(stopped, self.queue.heartbeat)

    def aside(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(_logged(work))
        self._at_once.add(task)
        task.add_done_callback(self._at_once.discard)

    async def _answer_at_once(self, inbound: Inbound) -> None:
        """The door's answers and /stop, here; a /stop for a turn running on another replica
        goes to that replica (`bot.replicas.stop`)."""
        command = parse_command(inbound.text)
        key = inbound.session_key
        stop = command is not None and command.name == "stop" and not self._runs(key)
        if stop and await self.stops.running_elsewhere(key):
            await self.stops.forward(inbound)
            return
        await self._answer_here(inbound)

    async def _answer_here(self, inbound: Inbound) -> None:
        await self.router.answer_at_once(inbound, self.replier_for(inbound), self.reach)

    def _runs(self, session_key: str) -> bool:
        return self.router.turns.running.is_running(session_key)

    async def _answer(self, update: str) -> None:
        since = time.monotonic()
        try:
            entry = await self.journal.take(update)
        except Held:  # another take's lease still runs: the job is tried again in a second
            log.info("queue_turn_held", inbound=update)
            raise
        if entry is None:  # answered already: the job ran again after its end was lost
            return
        lease = self.leases.hold(entry, since)
        self._running += 1
        try:
            entry, lease = await with_follow_ups(
                self.journal, self.leases, entry, lease, debounce=self.debounce
            )
            await self._turn(entry, lease)
        finally:
            self._running -= 1
            self.leases.release(lease)

    async def _turn(self, entry: Entry, lease: Lease) -> None:
        """Answer the entry while its lease holds; a turn stopped for good before its end
        lets go of the lease, so its next take need not wait for it to run out."""
        update = entry.inbound.id

        async def look() -> None:
            for _ in range(LOOKS):  # a look slower than the hold is made again
                since = time.monotonic()
                await self.journal.holds(update, entry.fence)
                self.leases.renewed(lease, since)
                if lease.valid():
                    return
            lease.check()  # the looks themselves took longer than the hold: `LeaseLapsed`

        try:
            replier = FencedReplier(self.replier_for(entry.inbound), look)
            with looking_first(look, wire=lease.check):  # each model call, each request
                await self.router.answer(entry, replier)
        except Fenced as exc:
            if isinstance(exc, LeaseLapsed) and await self._still_held(entry):
                log.warning("queue_turn_again", inbound=update, error="lease lapsed")
                await self._let_go(entry)
                raise  # procrastinate runs it again (`RetryStrategy`), from its ledger
            log.warning("queue_turn_fenced", inbound=update)  # another replica has it now
        except StoreAway as exc:  # the job fails: procrastinate runs it again (`RetryStrategy`)
            log.warning("queue_turn_again", inbound=update, error=str(exc))
            await self._let_go(entry)
            raise

    async def _still_held(self, entry: Entry) -> bool:
        """Whether the entry is still this take's, as the database says (not the clock: a
        lapse says only that this process could not be sure for a while)."""
        try:
            await self.journal.holds(entry.inbound.id, entry.fence)
        except Fenced:
            return False
        return True

    async def _let_go(self, entry: Entry) -> None:
        with contextlib.suppress(PsycopgError, PoolTimeout):
            await self.journal.release(entry.inbound.id, entry.fence)


@dataclass(eq=False)
class FencedReplier:
    """The channel's replier for a queued turn, sending nothing once another worker took the
    entry (a replica frozen or cut from the database past its lease, whose turn was given
    away): each part is sent only after the turn's look said it is still this turn's (and the
    channel's requests look again right before each goes out, after its wait for a send slot,
    and check the lease at the wire)."""

    inner: Replier
    look: Callable[[], Awaitable[None]]

    def parts(self, text: str) -> Sequence[object]:
        return self.inner.parts(text)

    async def send_part(self, part: object) -> None:
        await self.look()
        await self.inner.send_part(part)

    def typing(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self.inner.typing()

    async def acknowledge(self) -> None:
        await self.inner.acknowledge()

    def __getattr__(self, name: str) -> Any:  # the channel's own (drafts, where it has them)
        return getattr(self.inner, name)


async def _logged(work: Coroutine[Any, Any, None]) -> None:
    try:
        await work
    except Exception:
        log.exception("answer_failed")
