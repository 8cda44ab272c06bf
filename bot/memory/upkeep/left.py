"""`LeftJobs`: with replicas, the consolidation jobs one replica kept and never ran (it died, or
stopped first) are run by another. A service, run once in the cluster: every `every` seconds it
queues on its replica the jobs kept longer than `after` (a consolidation's timeout and grace:
no live replica still waits for them) that this replica has not queued
(`Consolidator.resume`). A job still queued on a live replica may be taken this way too: it runs
once wherever it runs, under its scope's lock (`JobStore.taken`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

import structlog

from bot.background import OwnedTask, periodically
from bot.memory.upkeep.consolidation import WAIT_GRACE
from bot.settings import MemorySettings

log = structlog.get_logger(__name__)
EVERY = 60.0  # seconds between two looks


class Resuming(Protocol):
    async def resume(self, *, made_before: datetime | None = None) -> int: ...


class LeftJobs:
    def __init__(
        self,
        consolidator: Resuming,
        *,
        after: timedelta,
        now: Callable[[], datetime],
        every: float = EVERY,
    ) -> None:
        self.consolidator = consolidator
        self.after = after
        self.now = now
        self.every = every
        self._task = OwnedTask("consolidation-left")

    @classmethod
    def from_settings(
        cls, config: MemorySettings, consolidator: Resuming, now: Callable[[], datetime]
    ) -> LeftJobs:
        """A job is left once a consolidation's timeout (and the grace for its writes) passed."""
        after = timedelta(seconds=config.consolidation_timeout + WAIT_GRACE)
        return cls(consolidator, after=after, now=now)

    async def start(self) -> None:
        self._task.start(periodically(self.every, self._look))

    async def stop(self) -> None:
        await self._task.stop()

    async def run(self) -> int:
        """One look: how many jobs left by others it queued."""
        queued = await self.consolidator.resume(made_before=self.now() - self.after)
        if queued:
            log.info("consolidation_left_resumed", jobs=queued)
        return queued

    async def _look(self) -> None:
        try:
            await self.run()
        except Exception:  # the background boundary: looked at again next time
            log.warning("consolidation_left_failed", exc_info=True)
