"""Closing a conversation: what `/new` and a stale session's renewal both do to the old one.

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
        consolidated: bool | None = None
        if self.consolidator is not None and (messages := kept(session)):
            job = new_job(scope, session.key, messages, at=at)
            if wait:
                consolidated = await self.consolidator.consolidate_now(job)
            else:
                await self.consolidator.submit(job)
                consolidated = True
        fresh = await self.sessions.archive(session.key, reason=reason)
        if opening:
            fresh = replace(fresh, messages=opening)
            await self.sessions.save(fresh)
        await self.memory.clear_working(session.key)
        return Closed(session=fresh, consolidated=consolidated)
