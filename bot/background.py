"""Background work an object owns: `OwnedTask`, one asyncio task it starts, then cancels and
awaits when it stops (no fire-and-forget), and `periodically`, the loop a service runs in it.

A service starts its task in `start` and stops it in its own `stop`; a block (an async `with`)
starts it on entry and stops it on exit. Stopping one never started, or stopping it twice, does
nothing. The task's cancellation is swallowed (not a cancellation of the one stopping it,
which goes on up); any other exception it ended with comes out of
`stop` (a periodic job catches and logs its own failures: the next run tries again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any


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
