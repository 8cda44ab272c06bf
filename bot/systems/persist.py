"""System 50, memory persist: save the session with the exchange, then the daily note line.

The session save must succeed (it is the conversation); the note is best-effort: a failed
write is logged and never costs the user the reply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

import structlog

from bot.memory.notes import DailyNotes
from bot.pipeline import TurnContext
from bot.storage.sessions import SessionStore

log = structlog.get_logger(__name__)
LAST_INBOUND = "last_inbound_id"


class MemoryPersist:
    order = 50
    name = "memory-persist"

    def __init__(
        self, sessions: SessionStore, notes: DailyNotes, *, now: Callable[[], datetime]
    ) -> None:
        self.sessions = sessions
        self.notes = notes
        self.now = now

    async def process(self, ctx: TurnContext) -> None:
        await self._save_session(ctx)
        if ctx.reply is None:
            return
        try:
            await self.notes.append(
                ctx.scope, self.now(), ctx.user_message.content or "", ctx.reply
            )
        except OSError:
            log.warning("daily_note_failed", exc_info=True)

    async def _save_session(self, ctx: TurnContext) -> None:
        session, usages = ctx.session, ctx.usages
        ctx.session = replace(
            session,
            messages=(*session.messages, ctx.user_message, *ctx.new_messages),
            updated_at=self.now(),
            last_prompt_tokens=usages[-1].prompt_tokens if usages else session.last_prompt_tokens,
            total_prompt_tokens=session.total_prompt_tokens + sum(u.prompt_tokens for u in usages),
            total_completion_tokens=session.total_completion_tokens
            + sum(u.completion_tokens for u in usages),
            metadata={**session.metadata, LAST_INBOUND: ctx.inbound.id},
        )
        await self.sessions.save(ctx.session)
