"""The turn runner: one chat's turn under its lock, as a task /stop can cancel.

    `bot.turn.router` ─▶ run(inbound, replier) ─▶ the session it continues (`Continuation`:
        a damaged file set aside, a stale conversation renewed; the chat told first) ─▶ the
        message read (`bot.media`) ─▶ the pipeline (`OverflowRetry`: compacted once and run
        again after a context overflow) ─▶ the reply

A turn whose answer was saved but not recorded takes the reply from the session
(`SessionMarks.last_inbound`): the model is called at most once for a message whose answer was
saved.

A model failure is told by its cause (`bot.llm.failures`): the owner, in their private chat,
what failed and which setting to change; anyone else a short line. The same persistent failure
several turns in a row (`bot.conversation.breakdown`) closes the conversation: the chat is told,
and the message is answered once more in a new one.

While the model writes, a replier that can shows the text as it comes (`bot.turn.live`); that
draft is handed over to the reply (or closed) before the reply is recorded: the ledger's
message is the only one left, where the channel can the very message that showed the draft.

A turn starts with the replier's acknowledgement (Telegram: a reaction on the message). In a
group the message reaches the model with its sender's name, after what the group said meanwhile
without addressing the bot (`bot.conversation.speakers`, kept by `bot.storage.chatter`), which is
dropped once a turn showed it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import structlog

from bot.conversation import speakers
from bot.conversation.breakdown import OVERFLOW_KIND, Breakdowns, kind_of
from bot.conversation.continuation import Continuation
from bot.conversation.overflow import MESSAGE_TOO_LONG, OverflowRetry
from bot.errors import ContextOverflow, LLMError
from bot.llm import failures
from bot.media.reader import MediaReader
from bot.models import ChatMessage, Inbound, Said, Session
from bot.pipeline import StopTurn, TurnContext
from bot.storage.chatter import ChatterStore
from bot.systems.tool_loop import EMPTY_REPLY
from bot.turn.access import AccessPolicy
from bot.turn.alerts import OwnerAlerts
from bot.turn.chats import ChatLocks, RunningTurns
from bot.turn.delivery import Delivery, Replier
from bot.turn.live import LiveReply, live_reply

log = structlog.get_logger(__name__)


class TurnRunner:
    def __init__(
        self,
        *,
        overflow: OverflowRetry,  # the pipeline, run again after a context overflow
        continuation: Continuation,
        access: AccessPolicy,
        locks: ChatLocks,
        running: RunningTurns,
        delivery: Delivery,  # the chat's notices before the reply
        chatter: ChatterStore | None = None,  # None: group messages not for the bot are dropped
        media: MediaReader | None = None,  # None: a message's attachments are not read
        breakdowns: Breakdowns | None = None,  # None: a conversation is never restarted
    ) -> None:
        self.overflow = overflow
        self.continuation = continuation
        self.access = access
        self.locks = locks
        self.running = running
        self.delivery = delivery
        self.chatter = chatter
        self.media = media
        self.breakdowns = breakdowns
        self.alerts = OwnerAlerts(access, delivery)  # a channel connects its reach

    async def run(self, inbound: Inbound, replier: Replier) -> str:
        """The turn under its chat lock, as a task /stop can cancel ("" when it did)."""
        turn_id = uuid.uuid4().hex[:12]
        key = inbound.session_key
        with structlog.contextvars.bound_contextvars(turn=turn_id):
            async with self.locks.hold(key):
                reply = await self.running.run(key, self._turn(inbound, turn_id, replier))
        return reply or ""

    async def _turn(self, inbound: Inbound, turn_id: str, replier: Replier) -> str:
        session = await self.continuation.load(inbound.session_key)
        if session.marks.last_inbound == inbound.id:
            log.info("turn_already_answered", inbound=inbound.id)
            reply = _last_reply(session)
            scope = self.access.scope_for(inbound)
            await self.continuation.noted(session, scope, reply, messages=inbound.joins)
            return reply
        await replier.acknowledge()

        async def say(text: str) -> None:
            await self.delivery.notice(text, replier)

        session = await self.continuation.resume(
            session, self.access.scope_for(inbound), say=say, busy=replier.typing
        )
        log.info("turn_start", chars=len(inbound.text), attachments=len(inbound.attachments))
        async with replier.typing(), live_reply(replier) as live:
            reply, ctx = await self._answer(inbound, turn_id, session, live, say)
            if live is not None:
                live.ends_in(reply)
        if ctx is None:
            return reply
        if self.chatter is not None:  # shown once: a turn that failed shows it again
            await self.chatter.drop(inbound.session_key, {said.id for said in ctx.chatter})
        log.info("turn_done", reply_chars=len(reply))
        return reply

    async def _answer(
        self,
        inbound: Inbound,
        turn_id: str,
        session: Session,
        live: LiveReply | None,
        say: Callable[[str], Awaitable[None]],
    ) -> tuple[str, TurnContext | None]:
        """The turn's reply, with its context when the pipeline ran to its end; after the same
        persistent failure `Breakdowns.limit` times in a row, a new conversation (the chat
        told) and the message answered once more in it."""
        reply, ctx, kind = await self._attempt(inbound, turn_id, session, live)
        key = inbound.session_key
        if self.breakdowns is None or kind is None:
            if self.breakdowns is not None and ctx is not None:
                self.breakdowns.answered(key)
            return reply, ctx
        if not self.breakdowns.failed(key, kind):
            return reply, ctx
        renewal = await self.breakdowns.restart(session, self.access.scope_for(inbound), kind=kind)
        await say(renewal.notice)
        reply, ctx, _ = await self._attempt(inbound, turn_id, renewal.session, live)
        return reply, ctx

    async def _attempt(
        self, inbound: Inbound, turn_id: str, session: Session, live: LiveReply | None
    ) -> tuple[str, TurnContext | None, str | None]:
        """The reply, the context when the pipeline ran to its end, and the kind of a failure
        a new conversation may cure (`bot.conversation.breakdown`)."""
        try:
            ctx = await self._context(inbound, turn_id, session)
            ctx.live = live
            ctx = await self.overflow.run(ctx)
        except StopTurn as stop:
            unfit = isinstance(stop.__cause__, ContextOverflow) and stop.reply != MESSAGE_TOO_LONG
            return stop.reply or "", None, OVERFLOW_KIND if unfit else None
        except LLMError as exc:
            log.warning("turn_llm_failed", error=type(exc).__name__, cause=str(exc.cause))
            await self.alerts.failed(exc, inbound)
            return failures.tell(exc, owner=self._owner_chat(inbound)), None, kind_of(exc)
        return ctx.reply or "", ctx, None

    async def _context(self, inbound: Inbound, turn_id: str, session: Session) -> TurnContext:
        """The turn's context, what came with the message read first (`bot.media`: its one
        line ends the turn, `StopTurn`, when it cannot be read)."""
        scope = self.access.scope_for(inbound)
        reading = await self.media.read(inbound, scope) if self.media else None
        text = reading.text if reading else inbound.text
        return TurnContext(
            inbound=inbound,
            turn_id=turn_id,
            scope=scope,
            session=session,
            user_message=ChatMessage(
                role="user",
                content=speakers.spoken(inbound, text),
                at=inbound.received_at,
                turn=turn_id,
            ),
            images=reading.images if reading else (),
            attached=reading.attached if reading else "",
            written=list(reading.written) if reading else [],
            chatter=await self._chatter(inbound),
        )

    async def _chatter(self, inbound: Inbound) -> tuple[Said, ...]:
        """What the group said meanwhile (a private chat has none: no file read per turn)."""
        if self.chatter is None or inbound.is_private:
            return ()
        return await self.chatter.pending(inbound.session_key)

    def _owner_chat(self, inbound: Inbound) -> bool:
        """An owner in their private chat (or at the console): told what failed and what to
        change; a group, even the owner's message in it, hears the short words."""
        return inbound.is_private and self.access.is_owner(inbound.user_id)


def _last_reply(session: Session) -> str:
    """The final answer of the session's last turn (what the user should have received)."""
    for message in reversed(session.messages):
        if message.role == "user":
            break
        if message.role == "assistant":
            return (message.content or "").strip() or EMPTY_REPLY
    return ""
