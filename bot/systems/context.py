"""System 20, context building: the system prompt — persona, clock, how to remember, `# Memory`.

The memory section comes from `MemoryRecall`: fresh from the files every turn, within its token
budget, and only the memory this chat may see (DESIGN §3).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.memory.recall import MemoryRecall
from bot.pipeline import TurnContext

REMEMBERING = "# Remembering"


class ContextBuilding:
    order = 20
    name = "context-building"

    def __init__(
        self,
        *,
        persona: str,
        instructions: str,
        recall: MemoryRecall,
        now: Callable[[], datetime],
    ) -> None:
        self.persona = persona
        self.instructions = f"{REMEMBERING}\n{instructions}" if instructions else ""
        self.recall = recall
        self.now = now

    async def process(self, ctx: TurnContext) -> None:
        moment = self.now()
        memory = await self.recall.view(ctx.scope, ctx.inbound.session_key, moment.date())
        parts = [
            self.persona,
            f"Current time: {moment:%A %Y-%m-%d %H:%M %Z}".strip(),
            self.instructions,
            memory.text,
        ]
        ctx.system_prompt = "\n\n".join(part for part in parts if part)
