"""Item decay as a service: at start-up and then once a day, the idle items of every scope lose
salience (`MemoryWriter.decay`: halved after `decay_days` unused, never deleted)."""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from bot.memory.upkeep.schedule import DAILY, DailyOverScopes
from bot.models import MemoryScope
from bot.storage.workspace import Workspace


class Decayer(Protocol):
    async def decay(self, scope: MemoryScope) -> int: ...


class ItemDecay(DailyOverScopes):
    def __init__(self, writer: Decayer, workspace: Workspace, *, every: timedelta = DAILY) -> None:
        super().__init__("item_decay", writer.decay, workspace, every=every)
