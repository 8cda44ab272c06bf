"""The turn runner: access, commands, the inbox journal, one chat's turns in order, the reply.

channel ──Inbound──▶ TurnRunner.handle ─▶ access ─▶ command? ─▶ inbox.accept
                     ─▶ chat lock ─▶ pipeline (as a task /stop can cancel) ─▶ reply ─▶ inbox.done

When the model says the prompt is over its context window, the session is compacted once and
the same turn runs again; if it still does not fit, the user is told so (seed 004).

Before the pipeline, the chat hears (before the reply) that a damaged session file was set aside,
and that a stale conversation was closed and a new one started (`bot.conversation.renewal`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import datetime
from typing import Protocol

import structlog

from bot.conversation.compaction import Compactor
from bot.conversation.renewal import SessionRenewal
from bot.errors import ContextOverflow, LLMError
from bot.models import ChatMessage, Inbound, Session
from bot.pipeline import Pipeline, StopTurn, TurnContext
from bot.storage.inbox import Inbox
from bot.storage.sessions import RECOVERED_FROM, SessionStore
from bot.systems.persist import LAST_INBOUND
from bot.systems.tool_loop import EMPTY_REPLY
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks, RunningTurns
from bot.turn.commands import Commands, parse_command

log = structlog.get_logger(__name__)

REFUSAL = "Sorry, this is a private assistant. Ask its owner for access."
TOO_LONG = (
    "This conversation is too long for the model even after compacting it. Use /new to start fresh."
)
DAMAGED_SESSION = (
    "I couldn't read our previous conversation (the file was damaged); I set it aside and "
    "started fresh. Your memory is intact."
)


class Replier(Protocol):
    """How a channel answers one chat."""

    async def send(self, text: str) -> None: ...

    def typing(self) -> AbstractAsyncContextManager[None]: ...


class TurnRunner:
    def __init__(
        self,
        *,
        pipeline: Pipeline,
        sessions: SessionStore,
        inbox: Inbox,
        access: AccessPolicy,
        commands: Commands,
        locks: ChatLocks,
        running: RunningTurns,
        now: Callable[[], datetime],
        compactor: Compactor | None = None,  # None: no compaction and retry after an overflow
        overflow_keep: int = 10,  # messages the overflow compaction keeps
        renewal: SessionRenewal | None = None,  # None: sessions never go stale
    ) -> None:
        self.pipeline = pipeline
        self.sessions = sessions
        self.inbox = inbox
        self.access = access
        self.commands = commands
        self.locks = locks
        self.running = running
        self.now = now
        self.compactor = compactor
        self.overflow_keep = overflow_keep
        self.renewal = renewal
        self._refused: set[int] = set()

    async def handle(self, inbound: Inbound, replier: Replier) -> None:
        """Everything that happens to one accepted message."""
        with structlog.contextvars.bound_contextvars(chat=inbound.session_key):
            if not self.access.allows(inbound.user_id):
                await self._refuse(inbound, replier)
                return
            if (command := parse_command(inbound.text)) is not None:
                await replier.send(await self.commands.run(command, inbound))
                return
            await self.inbox.accept(inbound)
            await self.process(inbound, replier)

    async def replay(self, replier_for: Callable[[Inbound], Replier], *, channel: str) -> int:
        """Answer the channel's messages a crash left unanswered, in arrival order."""
        pending = [i for i in await self.inbox.pending() if i.channel == channel]
        for inbound in pending:
            log.info("inbox_replay", inbound=inbound.id, chat=inbound.session_key)
            await self.process(inbound, replier_for(inbound))
        return len(pending)

    async def process(self, inbound: Inbound, replier: Replier) -> None:
        """Run a journaled message's turn under its chat lock, reply, and close the entry."""
        turn_id = uuid.uuid4().hex[:12]
        key = inbound.session_key
        with structlog.contextvars.bound_contextvars(chat=key, turn=turn_id):
            async with self.locks.hold(key):
                try:
                    reply = await self.running.run(key, self._turn(inbound, turn_id, replier))
                    if reply:
                        await replier.send(reply)
                except asyncio.CancelledError:
                    raise  # shutting down: the entry stays and is replayed at start
                except Exception:
                    await self.inbox.done(inbound.id)
                    raise
            await self.inbox.done(inbound.id)

    async def _turn(self, inbound: Inbound, turn_id: str, replier: Replier) -> str:
        session = await self.sessions.load(inbound.session_key)
        if session.metadata.get(LAST_INBOUND) == inbound.id:
            log.info("turn_already_answered", inbound=inbound.id)
            return _last_reply(session)
        session = await self._begin(session, inbound, replier)
        ctx = TurnContext(
            inbound=inbound,
            turn_id=turn_id,
            scope=self.access.scope_for(inbound),
            session=session,
            user_message=ChatMessage(
                role="user", content=inbound.text, at=inbound.received_at, turn=turn_id
            ),
        )
        log.info("turn_start", chars=len(inbound.text))
        async with replier.typing():
            try:
                ctx = await self._run(ctx)
            except StopTurn as stop:
                return stop.reply or ""
            except LLMError as exc:
                log.warning("turn_llm_failed", error=type(exc).__name__)
                return exc.user_message
        log.info("turn_done", reply_chars=len(ctx.reply or ""))
        return ctx.reply or ""

    async def _run(self, ctx: TurnContext) -> TurnContext:
        """Run the pipeline; after a context overflow, compact once and run the turn again
        on the compacted session. The context that ran to the end."""
        try:
            await self.pipeline.run(ctx)
            return ctx
        except ContextOverflow:
            retry = await self._compacted(ctx)
            if retry is None:
                raise
        log.info("turn_retry_after_compaction", messages=len(retry.session.messages))
        try:
            await self.pipeline.run(retry)
        except ContextOverflow as exc:
            log.warning("turn_overflow_after_compaction")
            raise StopTurn(TOO_LONG) from exc
        return retry

    async def _compacted(self, ctx: TurnContext) -> TurnContext | None:
        """A fresh context for the same turn over the compacted (and saved) session; None
        when there is no compactor or nothing to compact."""
        log.warning("turn_context_overflow", messages=len(ctx.session.messages))
        if self.compactor is None:
            return None
        result = await self.compactor.compact(
            ctx.session, keep=self.overflow_keep, reason="overflow", scope=ctx.scope
        )
        if not result.compacted:
            return None
        return TurnContext(
            inbound=ctx.inbound,
            turn_id=ctx.turn_id,
            scope=ctx.scope,
            session=result.session,
            user_message=ctx.user_message,
        )

    async def _begin(self, session: Session, inbound: Inbound, replier: Replier) -> Session:
        """The session this turn continues: the user hears first when a damaged file was set
        aside, and when a stale conversation was closed and a new one started."""
        if RECOVERED_FROM in session.metadata:
            metadata = {k: v for k, v in session.metadata.items() if k != RECOVERED_FROM}
            session = replace(session, metadata=metadata)
            await self.sessions.save(session)  # told once, even if this turn fails
            await replier.send(DAMAGED_SESSION)
        if self.renewal is None or (reason := self.renewal.stale(session)) is None:
            return session
        async with replier.typing():
            renewal = await self.renewal.renew(
                session, self.access.scope_for(inbound), reason=reason
            )
        await replier.send(renewal.notice)
        return renewal.session

    async def _refuse(self, inbound: Inbound, replier: Replier) -> None:
        log.info("access_refused", user=inbound.user_id)
        if inbound.user_id in self._refused:
            return
        self._refused.add(inbound.user_id)
        await replier.send(REFUSAL)


def _last_reply(session: Session) -> str:
    """The final answer of the session's last turn (what the user should have received)."""
    for message in reversed(session.messages):
        if message.role == "user":
            break
        if message.role == "assistant":
            return (message.content or "").strip() or EMPTY_REPLY
    return ""
