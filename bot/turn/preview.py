"""The prompt the next message in a chat would get, built without the model: `python -m bot
prompt --chat KEY` (`bot.cli.prompt`); and how full it is, the one figure /status, /context,
/compact and that command show (`estimate`).

System 20 builds it over the chat's saved session and the workspace, exactly as in a turn (the
chat's memory scope decided by `AccessPolicy` as for a message from that chat); nothing is
written and the model is not called. What system 18 might compact first is not run.

The figure is the meter's (`PromptMeter.estimate`, what compaction decides by). What a
session's requests hold beyond the conversation (instructions, memory, tools) is measured by
each turn; before a chat's first turn (a new chat, or after /new) it is measured here, on the
first prompt built with an empty message: what that prompt will really take, not the room
memory may take at most.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from bot.llm.inspection import Breakdown, SentRequest, breakdown
from bot.llm.meter import PromptEstimate, PromptMeter, how_full
from bot.models import ChatMessage, Inbound, Session, ToolSpec, parse_session_key
from bot.pipeline import System, TurnContext
from bot.storage.sessions import SessionStore
from bot.turn.access import AccessPolicy

PREVIEW = "preview"


class UnknownChat(ValueError):
    """The key names no chat this workspace has a session for."""


class PromptPreview:
    def __init__(
        self,
        *,
        context: System,  # system 20
        sessions: SessionStore,
        access: AccessPolicy,
        tools: Sequence[ToolSpec],
        meter: PromptMeter,  # counts as /context does, against the model's window
        now: Callable[[], datetime],
    ) -> None:
        self.context = context
        self.meter = meter
        self.sessions = sessions
        self.access = access
        self.tools = tuple(tools)
        self.now = now

    def chats(self) -> list[str]:
        """The session keys this workspace has a conversation for."""
        return self.sessions.keys()

    async def next_request(self, session_key: str, text: str) -> SentRequest:
        """The request a message `text` in the chat would start with; `UnknownChat` unless the
        chat has a session."""
        inbound = self._inbound(session_key, text)
        return await self._request(inbound, await self.sessions.load(session_key))

    async def estimate(self, inbound: Inbound, session: Session) -> PromptEstimate:
        """How full the next prompt of `session` (the chat of `inbound`) is: the one figure."""
        if session.marks.system_tokens is not None:
            return self.meter.estimate(session)
        request = await self._request(replace(inbound, text="", attachments=()), session)
        measured = self.meter.calibrate(
            request=request.messages,
            conversation=(*session.messages, request.message),
            reported=None,
        )
        return self.meter.estimate(session, beyond=measured.system_tokens)

    async def how_full(self, session_key: str) -> str:
        """The chat's "how full" line, as /status and /context say it."""
        inbound = self._inbound(session_key, "")
        return how_full(await self.estimate(inbound, await self.sessions.load(session_key)))

    async def _request(self, inbound: Inbound, session: Session) -> SentRequest:
        """System 20 over `session` for a message `inbound`."""
        ctx = TurnContext(
            inbound=inbound,
            turn_id=PREVIEW,
            scope=self.access.scope_for(inbound),
            session=session,
            user_message=ChatMessage(role="user", content=inbound.text, at=inbound.received_at),
        )
        await self.context.process(ctx)
        return SentRequest(
            messages=tuple(ctx.request()),
            tools=self.tools,
            parts=ctx.prompt_parts,
            conversation=ctx.session.messages,
            message=ctx.user_message,
            at=inbound.received_at,
        )

    def count(self, request: SentRequest) -> Breakdown:
        return breakdown(request, self.meter.tokens, window=self.meter.window)

    def _inbound(self, session_key: str, text: str) -> Inbound:
        """A message from the chat: a private chat's id is its user's (Telegram's groups have
        negative ids; the console's chat is 0, its local user)."""
        parts = parse_session_key(session_key)
        if parts is None or session_key not in self.chats():
            raise UnknownChat(session_key)
        channel, chat_id, thread_id = parts
        private = chat_id >= 0 and thread_id is None
        return Inbound(
            id=f"{PREVIEW}:{session_key}",
            channel=channel,
            chat_id=chat_id,
            user_id=chat_id if private else -1,
            text=text,
            received_at=self.now(),
            chat_type="private" if private else "group",
            thread_id=thread_id,
        )
