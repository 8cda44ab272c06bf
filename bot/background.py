"""Background work an object owns: `Service` (what the app starts before the first message and
stops at shutdown), `OwnedTask`, one asyncio task it starts, then cancels and awaits when it
stops (no fire-and-forget), `periodically`, the loop a service runs in it, and
`in_a_daemon_thread`, blocking work a stop never waits for, and `WarmUp`: such work at the
start, or once the start is over.

A service starts its task in `start` and stops it in its own `stop`; a block (an async `with`)
starts it on entry and stops it on exit. Stopping one never started, or stopping it twice, does
nothing. The task's cancellation is swallowed (not a cancellation of the one stopping it,
which goes on up); any other exception it ended with comes out of
`stop` (a periodic job catches and logs its own failures: the next run tries again).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Protocol

import structlog

log = structlog.get_logger(__name__)


class Service(Protocol):
    """Background work the app owns: started before the first message, stopped at shutdown."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class OwnedTask:
    def __init__(self, name: str) -> None:
        self.name = name
        self._task: asyncio.Task[object] | None = None

    def start(self, work: Coroutine[Any, Any, object]) -> None:
        self._task = asyncio.create_task(work, name=self.name)

    async def stop(self) -> None:
        """Cancel the task and wait until it ended."""
        if self._task is None:
            return
        caller = asyncio.current_task()
        before = caller.cancelling() if caller is not None else 0  # e.g. stopping in an unwind
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            if caller is not None and caller.cancelling() > before:
                raise  # the one stopping was cancelled while it waited: that goes on up
        finally:
            self._task = None


async def periodically(seconds: float, job: Callable[[], Awaitable[object]]) -> None:
    """Run `job` every `seconds`, the first time `seconds` from now, until cancelled."""
    while True:
        await asyncio.sleep(seconds)
        await job()


async def in_a_daemon_thread(work: Sequence[Callable[[], None]], *, name: str) -> None:
    """Run each of `work` in one daemon thread (an exit never waits for it: an import under
    way, say) and wait for it; a failure is logged, the next goes on."""
    loop, done = asyncio.get_running_loop(), asyncio.Event()

    def run_all() -> None:
        for piece in work:
            try:
                piece()
            except Exception:  # its first use does it again and says what failed
                log.warning("background_work_failed", work=name, exc_info=True)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(done.set)

    threading.Thread(target=run_all, name=name, daemon=True).start()
    await done.wait()


class WarmUp:
    """What a start may leave for later (an import, a file to load): run in a daemon thread at
    `start` (`at_start`), or once an event says the start is over (`after`)."""

    def __init__(self, work: Sequence[Callable[[], None]] = (), *, at_start: bool = True) -> None:
        self.work = tuple(work)
        self.at_start = at_start
        self._task = OwnedTask("warm-up")

    async def start(self) -> None:
        if self.at_start:
            await in_a_daemon_thread(self.work, name="warm-up")

    def after(self, started: asyncio.Event) -> None:
        if self.at_start:
            return

        async def warm() -> None:
            await started.wait()
            await in_a_daemon_thread(self.work, name="warm-up")

        self._task.start(warm())

    async def stop(self) -> None:
        await self._task.stop()
