"""Closing a conversation: what `/new` and a stale session's renewal both do to the old one;
`hand_over`, the one way messages leaving a session reach consolidation (closing, and the
window's trimming: `bot.conversation.window`).

close(session, scope, at=…, wait=…) ─▶ Closed
    ├─ consolidation job for its messages (`wait`: folded now, bounded, as /new shows;
    │   otherwise durable at once and folded in the background, as renewal does)
    ├─ the session file archived (never deleted), a fresh one saved (opening with the
    │   messages given, as renewal's summary)
    └─ the chat's working memory cleared
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from bot.memory.forgetting import forgotten
from bot.memory.upkeep.consolidation import ConsolidationQueue
from bot.models import ChatMessage, MemoryScope, Session
from bot.storage.jobs import new_job
from bot.storage.sessions import SessionStore


def kept(session: Session) -> tuple[ChatMessage, ...]:
    """The session's messages that hold something: those /forget emptied are not summarised."""
    return tuple(m for m in session.messages if not forgotten(m))


class WorkingReset(Protocol):
    """Clears a session's working memory (`MemoryWriter.clear_working`)."""

    async def clear_working(self, session_key: str) -> None: ...


@dataclass(frozen=True)
class Closed:
    session: Session  # the fresh, saved session that follows
    consolidated: bool | None  # None: nothing consolidated; with `wait`, whether the model did


class ConversationClose:
    def __init__(
        self,
        *,
        sessions: SessionStore,
        consolidator: ConsolidationQueue | None,  # None: consolidation is off
        memory: WorkingReset,
    ) -> None:
        self.sessions = sessions
        self.consolidator = consolidator
        self.memory = memory

    def consolidates(self, session: Session) -> bool:
        """Whether closing `session` folds its messages into memory."""
        return bool(kept(session)) and self.consolidator is not None

    async def close(
        self,
        session: Session,
        scope: MemoryScope,
        *,
        at: datetime,
        wait: bool,
        opening: tuple[ChatMessage, ...] = (),
        reason: str = "/new",  # why it ended, in its archive file
    ) -> Closed:
        consolidated = await self.hand_over(scope, session.key, kept(session), at=at, wait=wait)
        fresh = await self.sessions.archive(session.key, reason=reason)
        if opening:
            fresh = replace(fresh, messages=opening)
            await self.sessions.save(fresh)
        await self.memory.clear_working(session.key)
        return Closed(session=fresh, consolidated=consolidated)

    async def hand_over(
        self,
        scope: MemoryScope,
        key: str,
        messages: tuple[ChatMessage, ...],
        *,
        at: datetime,
        wait: bool,
    ) -> bool | None:
        """Messages leaving session `key`, as one consolidation job: `wait`, folded now
        (bounded; whether the model did); otherwise durable at once and folded in the
        background (True). None: nothing handed over (no messages, or consolidation off)."""
        if self.consolidator is None or not messages:
            return None
        job = new_job(scope, key, messages, at=at)
        if not wait:
            await self.consolidator.submit(job)
            return True
        return await self.consolidator.consolidate_now(job)
