"""System 18, auto-compaction: keeps the prompt under the model's window (issue 4; a no-op now)."""

from __future__ import annotations

from bot.pipeline import TurnContext


class AutoCompaction:
    order = 18
    name = "auto-compaction"

    async def process(self, ctx: TurnContext) -> None:
        return None
