"""Daily upkeep over every memory scope: a service that runs one job for the global scope and
each chat's scope, once at start-up (before the first message) and then once a day."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

import structlog

from bot.background import OwnedTask, periodically
from bot.models import GLOBAL_SCOPE, MemoryScope
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)
DAILY = timedelta(days=1)
ScopeJob = Callable[[MemoryScope], Awaitable[int]]  # how many things it changed in that scope


class DailyOverScopes:
    def __init__(
        self, name: str, job: ScopeJob, workspace: Workspace, *, every: timedelta = DAILY
    ) -> None:
        self.name = name
        self.job = job
        self.workspace = workspace
        self.every = every
        self._task = OwnedTask(name)

    async def start(self) -> None:
        """Run once before the first message, then daily in an owned task."""
        await self.run()
        self._task.start(periodically(self.every.total_seconds(), self.run))

    async def stop(self) -> None:
        await self._task.stop()

    async def run(self) -> int:
        """One pass over every scope; the sum of what the job changed."""
        changed = 0
        scopes = await self._scopes()
        for scope in scopes:
            try:
                changed += await self.job(scope)
            except Exception:  # the background boundary: one scope's failure spares the rest
                log.warning(
                    "daily_job_failed",
                    job=self.name,
                    scope=scope.chat_key or "global",
                    exc_info=True,
                )
        if changed:
            log.info("daily_job", job=self.name, changed=changed, scopes=len(scopes))
        return changed

    async def _scopes(self) -> list[MemoryScope]:
        try:
            return [GLOBAL_SCOPE, *await asyncio.to_thread(self.workspace.chat_scopes)]
        except Exception:  # the background boundary: a folder unreadable, the database away
            log.warning("daily_job_failed", job=self.name, scope="chats", exc_info=True)
            return [GLOBAL_SCOPE]
