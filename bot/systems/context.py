"""System 20, context building: the system prompt with the `# Memory` section (seed 000)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

from bot.memory.long_term import LongTermMemory
from bot.memory.notes import DailyNotes
from bot.memory.section import MemorySnapshot, render_memory
from bot.models import MemoryScope
from bot.pipeline import TurnContext


class ContextBuilding:
    order = 20
    name = "context-building"

    def __init__(
        self,
        *,
        persona: str,
        long_term: LongTermMemory,
        notes: DailyNotes,
        recent_days: int,
        now: Callable[[], datetime],
    ) -> None:
        self.persona = persona
        self.long_term = long_term
        self.notes = notes
        self.recent_days = recent_days
        self.now = now

    async def process(self, ctx: TurnContext) -> None:
        moment = self.now()
        snapshot = await asyncio.to_thread(self._snapshot, ctx.scope, moment)
        parts = [self.persona, f"Current time: {moment:%A %Y-%m-%d %H:%M %Z}".strip()]
        if memory := render_memory(snapshot):
            parts.append(memory)
        ctx.system_prompt = "\n\n".join(parts)

    def _snapshot(self, scope: MemoryScope, moment: datetime) -> MemorySnapshot:
        today = moment.date()
        return MemorySnapshot(
            long_term=self.long_term.read(scope),
            today=self.notes.read_day(scope, today),
            recent=self.notes.recent_days(scope, today, self.recent_days),
        )
