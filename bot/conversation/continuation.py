"""The session a turn continues: the chat's saved session, unless its file was damaged (set
aside by `SessionStore`, and the user told once) or the conversation went stale (closed and
renewed, `bot.conversation.renewal`, and the user told before the reply)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace

from bot.conversation.renewal import SessionRenewal
from bot.models import MemoryScope, Session
from bot.storage.sessions import RECOVERED_FROM, SessionStore

DAMAGED_SESSION = (
    "I couldn't read our previous conversation (the file was damaged); I set it aside and "
    "started fresh. Your memory is intact."
)


class Continuation:
    def __init__(
        self,
        sessions: SessionStore,
        renewal: SessionRenewal | None = None,  # None: sessions never go stale
    ) -> None:
        self.sessions = sessions
        self.renewal = renewal

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
        if RECOVERED_FROM in session.metadata:
            metadata = {k: v for k, v in session.metadata.items() if k != RECOVERED_FROM}
            session = replace(session, metadata=metadata)
            await self.sessions.save(session)  # told once, even if this turn fails
            await say(DAMAGED_SESSION)
        if self.renewal is None or (reason := self.renewal.stale(session)) is None:
            return session
        async with busy():
            renewal = await self.renewal.renew(session, scope, reason=reason)
        await say(renewal.notice)
        return renewal.session
