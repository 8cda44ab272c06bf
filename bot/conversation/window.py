"""The session's window: past `memory_window` messages its older part leaves the session.

trim(session, scope, at=…) ─▶ Trimmed
    ├─ the older part (cut where compaction cuts: `cut_point`, at a user message) handed to
    │   consolidation by `ConversationClose.hand_over` (durable before anything else); with a
    │   window of 0 there is no consolidation and the session keeps its last `keep_messages`
    ├─ the part archived as a session file of the same key: no message is lost
    └─ the session saved with the rest
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import structlog

from bot.conversation.closing import ConversationClose
from bot.conversation.compaction import cut_point
from bot.models import MemoryScope, Session

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Trimmed:
    session: Session  # saved
    written: list[Path]  # the archived part's file, when one was cut


class SessionWindow:
    def __init__(
        self,
        closing: ConversationClose,
        *,
        memory_window: int = 0,  # 0: no consolidation, the session keeps `keep_messages`
        keep_messages: int = 10,
    ) -> None:
        self.closing = closing
        self.memory_window = memory_window
        self.keep_messages = keep_messages

    async def trim(self, session: Session, scope: MemoryScope, *, at: datetime) -> Trimmed:
        messages = session.messages
        consolidating = self.closing.consolidator is not None and self.memory_window > 0
        limit = self.memory_window if consolidating else self.keep_messages
        if len(messages) <= limit:
            return Trimmed(session, [])
        cut = cut_point(messages, keep=self.keep_messages)
        if cut == 0:
            return Trimmed(session, [])
        if consolidating:
            await self.closing.hand_over(scope, session.key, messages[:cut], at=at, wait=False)
        sessions = self.closing.sessions
        archived = await sessions.archive_part(session, messages[:cut])
        session = replace(session, messages=messages[cut:])
        await sessions.save(session)
        log.info("session_trimmed", cut=cut, kept=len(messages) - cut, consolidated=consolidating)
        return Trimmed(session, [archived] if archived else [])
