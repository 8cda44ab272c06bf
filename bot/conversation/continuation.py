"""The session a turn continues: the chat's saved session, unless its file was damaged (set
aside by `SessionStore`, and the user told once) or the conversation went stale (closed and
renewed, `bot.conversation.renewal`, and the user told before the reply)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import datetime

import structlog

from bot.conversation.renewal import SessionRenewal
from bot.memory.notes.daily import DailyNotes
from bot.models import MemoryScope, Session
from bot.storage.sessions import SessionStore

log = structlog.get_logger(__name__)
DAMAGED_SESSION = (
    "I couldn't read our previous conversation (the file was damaged); I set it aside and "
    "started fresh. Your memory is intact."
)


class Continuation:
    def __init__(
        self,
        sessions: SessionStore,
        renewal: SessionRenewal | None = None,  # None: sessions never go stale
        notes: DailyNotes | None = None,  # None: a turn answered before a kill is not noted
        now: Callable[[], datetime] | None = None,  # with `notes`: the time of a late line
    ) -> None:
        self.sessions = sessions
        self.renewal = renewal
        self.notes = notes
        self.now = now

    async def noted(
        self, session: Session, scope: MemoryScope, reply: str, *, messages: int = 1
    ) -> None:
        """The daily note line of the session's last exchange (its user message joining
        `messages`), answered `reply` before a kill that may have come before its line was
        written: written unless it is there."""
        user = next((m for m in reversed(session.messages) if m.role == "user"), None)
        if self.notes is None or self.now is None or user is None or not reply:
            return
        now = self.now()
        since = user.at.date() if user.at is not None else now.date()
        said = user.content or ""
        if await self.notes.append_once(scope, now, said, reply, since=since, messages=messages):
            log.info("note_line_recovered", session=session.key)

    async def load(self, key: str) -> Session:
        return await self.sessions.load(key)

    async def resume(
        self,
        session: Session,
        scope: MemoryScope,
        *,
        say: Callable[[str], Awaitable[None]],
        busy: Callable[[], AbstractAsyncContextManager[None]],
    ) -> Session:
        """The session this turn continues: `say` tells the chat first when a damaged file
        was set aside, and when a stale conversation was closed and a new one started (under
        `busy`, which shows the chat that work is going on)."""
        if session.marks.recovered_from is not None:
            session = replace(session, marks=replace(session.marks, recovered_from=None))
            await self.sessions.save(session)  # told once, even if this turn fails
            await say(DAMAGED_SESSION)
        if self.renewal is None or (reason := self.renewal.stale(session)) is None:
            return session
        async with busy():
            renewal = await self.renewal.renew(session, scope, reason=reason)
        await say(renewal.notice)
        return renewal.session
