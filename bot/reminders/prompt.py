"""System 22, the chat's next few reminders and tasks in the prompt (after system 20's memory),
so the model can answer "what did I ask you to remind me of?" without a tool call."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from bot.pipeline import TurnContext
from bot.reminders.store import ReminderStore

SHOWN = 5
HEADING = "# Scheduled in this chat (the `remind` tool changes them)"


@dataclass(eq=False)
class ScheduledInPrompt:
    order = 22
    name = "reminders"

    store: ReminderStore
    _: KW_ONLY
    shown: int = SHOWN

    async def process(self, ctx: TurnContext) -> None:
        items = await self.store.items(ctx.scope)
        mine = [i for i in items if i.chat == ctx.inbound.session_key and i.next_at is not None]
        if not mine or self.shown == 0:
            return
        mine.sort(key=lambda item: item.next_at)  # type: ignore[arg-type, return-value]
        lines = [f"- {item.line()}" for item in mine[: self.shown]]
        more = len(mine) - self.shown
        if more > 0:
            lines.append(f"- … and {more} more")
        section = "\n".join([HEADING, *lines])
        ctx.memory_prompt = f"{ctx.memory_prompt}\n\n{section}" if ctx.memory_prompt else section
