"""Per-chat coordination: one lock per chat, and the turn each chat is running (for /stop)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any


class ChatLocks:
    """One asyncio lock per chat; a lock nobody holds or waits for is dropped."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        async with lock:
            yield


class RunningTurns:
    """The turn each chat is running, so `/stop` can cancel it."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[str]] = {}
        self._stopped: set[asyncio.Task[str]] = set()

    async def run(self, key: str, work: Coroutine[Any, Any, str]) -> str | None:
        """The turn's reply, or None when `/stop` cancelled it."""
        task = asyncio.create_task(work)
        self._tasks[key] = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task in self._stopped and (current is None or not current.cancelling()):
                return None
            raise
        finally:
            if self._tasks.get(key) is task:
                del self._tasks[key]
            self._stopped.discard(task)

    def stop(self, key: str) -> bool:
        task = self._tasks.get(key)
        if task is None or task.done():
            return False
        self._stopped.add(task)
        task.cancel()
        return True

    def is_running(self, key: str) -> bool:
        return key in self._tasks
