"""System 20, context building: the system prompt — persona, clock, how to remember, `# Memory`,
`# Relevant Memory`.

The memory sections come from `MemoryPrompt` (`bot.memory.recall.prompt`, where the markdown
section and the memory pack are combined): fresh from the files every turn, within their token
budgets, and only the memory this chat may see (DESIGN §3). The structured items shown are noted
on the context for system 50 to mark used after the reply.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.index.transcripts import exchanges
from bot.memory.recall.prompt import MemoryPrompt
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
        memory: MemoryPrompt,
        now: Callable[[], datetime],
    ) -> None:
        self.persona = persona
        self.instructions = f"{REMEMBERING}\n{instructions}" if instructions else ""
        self.memory = memory
        self.now = now

    async def process(self, ctx: TurnContext) -> None:
        moment = self.now()
        query = ctx.user_message.content or ""
        conversation = frozenset(e.path for e in exchanges(ctx.session))
        found = await self.memory.sections(
            ctx.scope, ctx.inbound.session_key, query, moment, conversation=conversation
        )
        parts = [
            self.persona,
            f"Current time: {moment:%A %Y-%m-%d %H:%M %Z}".strip(),
            self.instructions,
            found.memory,
            found.relevant,
        ]
        ctx.system_prompt = "\n\n".join(part for part in parts if part)
        ctx.memory_shown = found.items
