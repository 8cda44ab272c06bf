"""The prompt the next message in a chat would get, built without the model: `python -m bot
prompt --chat KEY` (`bot.cli.prompt`).

System 20 builds it over the chat's saved session and the workspace, exactly as in a turn (the
chat's memory scope decided by `AccessPolicy` as for a message from that chat); nothing is
written and the model is not called. What system 18 might compact first is not run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from bot.llm.inspection import Breakdown, SentRequest, breakdown
from bot.llm.meter import PromptMeter, how_full
from bot.models import ChatMessage, Inbound, ToolSpec, parse_session_key
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
        ctx = TurnContext(
            inbound=inbound,
            turn_id=PREVIEW,
            scope=self.access.scope_for(inbound),
            session=await self.sessions.load(session_key),
            user_message=ChatMessage(role="user", content=text, at=inbound.received_at),
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

    async def how_full(self, session_key: str) -> str:
        """The chat's "how full" line, as /status and /context say it."""
        return how_full(self.meter.estimate(await self.sessions.load(session_key)))

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
