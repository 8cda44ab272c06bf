"""`Intake`: how a channel hands messages over to be answered, a chat's in order; and
`MemoryIntake`, the journal as the queue for one process (Telegram polling). Replicated mode's
queue shared by every replica is `bot.replicas.queue.QueueIntake`.

Each batch a channel receives is journaled (`Inbox.accept_all`) before the channel confirms it
to its source; then every chat with entries has one worker answering them in arrival order. A
chat's backlog holds only its own worker: another chat's message is answered as soon as it
arrives. A stranger's message and /stop never wait (`Router.route`).

At start the entries a stop or crash left are queued first, in arrival order per chat; then the
intake is the runner's outlet for its channel (`Router.outlets`): an entry journaled
elsewhere (a due reminder, `bot.reminders`) joins its chat's queue. `close`
stops taking entries, gives the running ones a grace period and cancels the rest (a reply part
under way is still sent and recorded, `Delivery.settle`): whatever is not finished stays in the
journal for the next start.

A chat's first turn waits a short debounce, and quick follow-ups queued before a turn starts
are answered together with it (`bot.turn.together`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

import structlog

from bot.models import Inbound
from bot.storage.inbox import Entry
from bot.turn.delivery import Replier
from bot.turn.door import Reach
from bot.turn.router import Router
from bot.turn.together import together

log = structlog.get_logger(__name__)


class Intake(Protocol):
    async def start(self) -> list[Entry]:
        """Begin answering; the entries a stop left, queued again."""
        ...

    async def receive(self, inbounds: Sequence[Inbound]) -> None:
        """Journal a batch and queue it: returns once it is durable (raises if it is not)."""
        ...

    def backlog(self) -> int: ...

    async def close(self, grace: float) -> None: ...

    def aside(self, work: Coroutine[Any, Any, None]) -> None: ...


class IntakeFactory(Protocol):
    """How the composition root picks the intake a channel builds once it is connected."""

    def __call__(
        self,
        router: Router,
        replier_for: Callable[[Inbound], Replier],
        *,
        channel: str,
        reach: Reach | None = None,
        debounce: float = 0.0,
    ) -> Intake: ...


class MemoryIntake:
    def __init__(
        self,
        router: Router,
        replier_for: Callable[[Inbound], Replier],
        *,
        channel: str,
        reach: Reach | None = None,  # the door's way to a private chat (owners, new users)
        debounce: float = 0.0,  # seconds a chat's first turn waits for follow-ups (`together`);
        # 0: none, and each message is a turn of its own
    ) -> None:
        self.debounce = debounce
        self.router = router
        self.replier_for = replier_for
        self.reach = reach
        self.channel = channel
        self._queues: dict[str, deque[Entry]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._at_once: set[asyncio.Task[None]] = set()
        self._left: set[str] = set()  # each chat's first entry a stop left: answered alone
        self._closing = False

    async def start(self) -> list[Entry]:
        """Queue the entries a stop left behind (and say which)."""
        pending = await self.router.inbox.pending()
        left = [entry for entry in pending if entry.inbound.channel == self.channel]
        firsts = {entry.inbound.session_key: entry.inbound.id for entry in reversed(left)}
        self._left = set(firsts.values())  # the turn a stop cut: its answer may be saved
        for entry in left:
            self._queue(entry)
        self.router.outlets[self.channel] = self._queue
        return left

    async def receive(self, inbounds: Sequence[Inbound]) -> None:
        """Journal a batch (returning only once it is on disk) and queue it."""
        journaled: list[Inbound] = []
        for inbound in inbounds:
            route = self.router.route(inbound)
            if route == "at_once":
                replier = self.replier_for(inbound)
                self.aside(self.router.answer_at_once(inbound, replier, self.reach))
            elif route == "journal":
                journaled.append(inbound)
        for entry in await self.router.inbox.accept_all(journaled):
            self._queue(entry)

    def backlog(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    async def close(self, grace: float) -> None:
        """Take no more entries; wait up to `grace` seconds for the ones running, cancel the
        rest (they stay journaled)."""
        self._closing = True
        self.router.outlets.pop(self.channel, None)
        tasks = [*self._workers.values(), *self._at_once]
        if not tasks:
            return
        later = self.backlog() - len(self._workers)
        log.warning(  # a person pressed Ctrl-C: say why the bot does not stop at once
            stopping_line(len(tasks), grace=grace, later=later),
            replies=len(tasks),
            waiting_at_most=f"{grace:g} s",
            left_for_next_start=later,
        )
        _, running = await asyncio.wait(tasks, timeout=grace)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await self.router.delivery.settle()  # a part under way finishes, and is recorded
        log.info(stopped_line(self.backlog()), cancelled=len(running), left=self.backlog())

    def _queue(self, entry: Entry) -> None:
        key = entry.inbound.session_key
        self._queues.setdefault(key, deque()).append(entry)
        if key not in self._workers and not self._closing:
            self._workers[key] = asyncio.create_task(self._work(key), name=f"chat {key}")

    async def _work(self, key: str) -> None:
        queue = self._queues[key]
        try:
            if self.debounce:
                await asyncio.sleep(self.debounce)
            while queue and not self._closing:
                entry = queue[0]
                if self.debounce:
                    entry = await together(queue, self.router.inbox, alone=self._left)
                await self.router.answer(entry, self.replier_for(entry.inbound))
                queue.popleft()
                self._left.discard(entry.inbound.id)
        except Exception:
            log.exception("chat_worker_failed", chat=key, left=len(queue))
        finally:
            del self._workers[key]
            if not queue:
                del self._queues[key]

    def aside(self, work: Coroutine[Any, Any, None]) -> None:
        """Run an answer that waits for no queue (a refusal, /stop, a notice); `close` waits
        for it like for the workers."""
        task = asyncio.create_task(_logged(work))
        self._at_once.add(task)
        task.add_done_callback(self._at_once.discard)


def stopping_line(replies: int, *, grace: float, later: int) -> str:
    """What a stop says while it lets the replies being written finish."""
    line = f"Stopping: finishing {_count(replies, 'reply', 'replies')} being written "
    line += f"({grace:g} s at most)"
    if later:
        line += f"; {_count(later, 'message')} more will be answered at the next start"
    return line


def stopped_line(left: int) -> str:
    """What a stop says once it is done."""
    if not left:
        return "Stopped: every message received was answered"
    return f"Stopped: {_count(left, 'message')} left to answer at the next start"


def _count(number: int, one: str, many: str = "") -> str:
    return f"{number} {one if number == 1 else many or one + 's'}"


async def _logged(work: Coroutine[Any, Any, None]) -> None:
    try:
        await work
    except Exception:
        log.exception("answer_failed")
