"""Item decay as a service: at start-up and then once a day, the idle items of every scope lose
salience (`MemoryWriter.decay`: halved after `decay_days` unused, never deleted)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Protocol

import structlog

from bot.models import GLOBAL_SCOPE, MemoryScope
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)
DAILY = timedelta(days=1)


class Decayer(Protocol):
    async def decay(self, scope: MemoryScope) -> int: ...


class ItemDecay:
    def __init__(self, writer: Decayer, workspace: Workspace, *, every: timedelta = DAILY) -> None:
        self.writer = writer
        self.workspace = workspace
        self.every = every
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Decay once before the first message, then daily in an owned task."""
        await self.run()
        self._task = asyncio.create_task(self._daily(), name="item-decay")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def run(self) -> int:
        """One pass over every scope; how many items were lowered."""
        try:
            scopes = [GLOBAL_SCOPE, *await asyncio.to_thread(self.workspace.chat_scopes)]
        except OSError:
            log.warning("item_decay_failed", scope="chats", exc_info=True)
            scopes = [GLOBAL_SCOPE]
        lowered = 0
        for scope in scopes:
            try:
                lowered += await self.writer.decay(scope)
            except Exception:  # the background boundary: one scope's failure spares the rest
                log.warning("item_decay_failed", scope=scope.chat_key or "global", exc_info=True)
        if lowered:
            log.info("item_decay", lowered=lowered, scopes=len(scopes))
        return lowered

    async def _daily(self) -> None:
        while True:
            await asyncio.sleep(self.every.total_seconds())
            await self.run()
