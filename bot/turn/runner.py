"""The turn runner: access, commands, one chat's turns in order, the reply through the ledger.

channel ──Inbound──▶ the door's (`bot.turn.door`), or /stop? ── answered at once (`answer_at_once`)
                     └─▶ inbox.accept (the journal) ─▶ `answer`: the reply made (a command, or
                         the pipeline under the chat lock, as a task /stop can cancel), recorded
                         in the entry, delivered part by part (`Delivery`), the entry closed

An entry whose reply is recorded is only delivered again, never made again; one whose turn was
saved but not recorded takes the reply from the session (`LAST_INBOUND`): the model is called at
most once for a message whose answer was saved. A channel that polls (Telegram) queues entries
per chat (`bot.turn.intake`); one that answers in line (the console, tests) calls `handle`.

A model failure is told by its cause (`bot.llm.failures`): the owner, in their private chat,
what failed and which setting to change; anyone else a short line.

When the model says the prompt is over its context window (or the meter says it would be, and
nothing is sent), the session is compacted once and the same turn runs again; if it still does
not fit, the user is told so (seed 004).

While the model writes, a replier that can shows the text as it comes (`bot.turn.live`); that
draft is closed before the reply is recorded, so the ledger's message is the only one left.

A turn starts with the replier's acknowledgement (Telegram: a reaction on the message). In a
group the message reaches the model with its sender's name, after what the group said meanwhile
without addressing the bot (`bot.conversation.speakers`): such chatter is journaled like any
message, kept by `bot.storage.chatter` (only from people the bot talks to: anyone else's is
dropped before the journal, and never meets the door), and dropped once a turn showed it.

Before the pipeline, the chat hears (before the reply) that a damaged session file was set aside,
and that a stale conversation was closed and a new one started (`bot.conversation.renewal`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

import structlog

from bot.conversation import speakers
from bot.conversation.compaction import Compactor
from bot.conversation.renewal import SessionRenewal
from bot.errors import ContextOverflow, LLMError
from bot.llm import failures
from bot.media.reader import MediaReader
from bot.models import ChatMessage, Inbound, Said, Session
from bot.pipeline import Pipeline, StopTurn, TurnContext
from bot.storage.chatter import ChatterStore
from bot.storage.inbox import Entry, Journal
from bot.storage.sessions import RECOVERED_FROM, SessionStore
from bot.systems.persist import LAST_INBOUND
from bot.systems.tool_loop import EMPTY_REPLY
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks, RunningTurns
from bot.turn.commands import Command, Commands, parse_command
from bot.turn.delivery import Delivery, Replier
from bot.turn.door import Door, Reach
from bot.turn.live import live_reply
from bot.turn.progress import NOTICE_AFTER, ProgressNotice

log = structlog.get_logger(__name__)
OVERFLOW_KEEP_SHARE = 0.5  # of the conversation's room in the window: kept after an overflow

SORRY = "Sorry, something went wrong on my side. Please try again."
TOO_LONG = (
    "This conversation is too long for the model even after compacting it. Use /new to start fresh."
)
MESSAGE_TOO_LONG = (
    "This message does not fit the model's context window. Please send a shorter one, or split "
    "it in parts."
)
DAMAGED_SESSION = (
    "I couldn't read our previous conversation (the file was damaged); I set it aside and "
    "started fresh. Your memory is intact."
)


class TurnRunner:
    def __init__(
        self,
        *,
        pipeline: Pipeline,
        sessions: SessionStore,
        inbox: Journal,
        access: AccessPolicy,
        door: Door,
        commands: Commands,
        locks: ChatLocks,
        running: RunningTurns,
        now: Callable[[], datetime],
        compactor: Compactor | None = None,  # None: no compaction and retry after an overflow
        overflow_keep: int = 10,  # messages the overflow compaction keeps
        renewal: SessionRenewal | None = None,  # None: sessions never go stale
        delivery: Delivery | None = None,  # default: `Delivery(inbox)`
        notice_after: float = NOTICE_AFTER,  # seconds before a slow command says what it does
        chatter: ChatterStore | None = None,  # None: group messages not for the bot are dropped
        media: MediaReader | None = None,  # None: a message's attachments are not read
    ) -> None:
        self.pipeline = pipeline
        self.sessions = sessions
        self.inbox = inbox
        self.access = access
        self.door = door
        self.commands = commands
        self.locks = locks
        self.running = running
        self.now = now
        self.compactor = compactor
        self.overflow_keep = overflow_keep
        self.renewal = renewal
        self.delivery = delivery or Delivery(inbox)
        self.notice_after = notice_after
        self.chatter = chatter
        self.media = media

    def jumps_queue(self, inbound: Inbound) -> bool:
        """The door's messages (a stranger's, /pair, /claim …) and /stop are answered at
        once, never journaled."""
        if not inbound.addressed:
            return False
        if self.door.takes(inbound):
            return True
        command = parse_command(inbound.text)
        return command is not None and command.name == "stop"

    def ignores(self, inbound: Inbound) -> bool:
        """Group chatter (a message not for the bot) that is not kept: from someone the bot
        does not talk to (nothing of theirs is journaled or stored, and the door stays shut
        and silent), or with chatter off."""
        if inbound.addressed:
            return False
        return self.chatter is None or not self.access.allows(inbound.user_id)

    async def answer_at_once(
        self, inbound: Inbound, replier: Replier, reach: Reach | None = None
    ) -> None:
        """Answer a message that `jumps_queue`; `reach` finds the private chats the door may
        tell (an owner, of a request; a user, that they were let in)."""
        with structlog.contextvars.bound_contextvars(chat=inbound.session_key):
            if self.door.takes(inbound):
                for notice in await self.door.answer(inbound):
                    chat = notice.chat_id
                    target = replier if chat is None else reach(chat) if reach else None
                    if target is not None:
                        await self.delivery.notice(notice.text, target)
                return
            command = parse_command(inbound.text)
            if command is not None:
                answer = await self.commands.run(command, inbound)
                await self.delivery.notice(answer.text, replier)

    async def handle(self, inbound: Inbound, replier: Replier, reach: Reach | None = None) -> None:
        """A message from a channel that answers in line: at once, or journaled and answered."""
        if self.ignores(inbound):
            return
        if self.jumps_queue(inbound):
            await self.answer_at_once(inbound, replier, reach)
            return
        entry = await self.inbox.accept(inbound)
        if entry is not None:
            await self.answer(entry, replier)

    async def replay(self, replier_for: Callable[[Inbound], Replier], *, channel: str) -> int:
        """Answer the channel's journaled messages a stop left unanswered, in arrival order."""
        pending = [e for e in await self.inbox.pending() if e.inbound.channel == channel]
        for entry in pending:
            await self.answer(entry, replier_for(entry.inbound))
        return len(pending)

    async def answer(self, entry: Entry, replier: Replier) -> None:
        """A journaled message's life: its reply made unless recorded, recorded, delivered, the
        entry closed. Cancelled (shutting down), the entry stays for the next start."""
        inbound = entry.inbound
        with structlog.contextvars.bound_contextvars(chat=inbound.session_key):
            if not inbound.addressed:
                await self._keep_chatter(inbound)
            elif entry.reply is None:
                entry = await self.inbox.answered(entry, await self._reply(inbound, replier))
            else:
                log.info("inbox_resend", inbound=inbound.id, parts_sent=entry.sent)
            if entry.reply:
                await self.delivery.deliver(entry, replier)
            await self.inbox.done(inbound.id, fence=entry.fence)

    async def _keep_chatter(self, inbound: Inbound) -> None:
        """Group chatter, kept for the chat's next turn (never a turn of its own)."""
        if self.chatter is not None and self.access.allows(inbound.user_id):
            await self.chatter.keep(inbound.session_key, speakers.said(inbound))

    async def _reply(self, inbound: Inbound, replier: Replier) -> str:
        """The command's answer, or the turn's; `SORRY` when something unexpected broke."""
        try:
            if (command := parse_command(inbound.text)) is not None:
                return await self._command(command, inbound, replier)
            return await self._locked_turn(inbound, replier)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("turn_failed", inbound=inbound.id)
            return SORRY

    async def _command(self, command: Command, inbound: Inbound, replier: Replier) -> str:
        """A command's answer (a file it has goes first, outside the ledger); one that takes
        time shows typing from its start, and says what it is doing if it takes longer than
        `notice_after` (`bot.turn.progress`)."""
        if not self.commands.takes_time(command):
            answer = await self.commands.run(command, inbound)
        else:

            async def say(text: str) -> None:
                await self.delivery.notice(text, replier)

            async with replier.typing(), ProgressNotice(say, after=self.notice_after) as progress:
                answer = await self.commands.run(command, inbound, progress=progress)
        if answer.document is not None:
            await self.delivery.notice(answer.document, replier)
        return answer.text

    async def _locked_turn(self, inbound: Inbound, replier: Replier) -> str:
        """The turn under its chat lock, as a task /stop can cancel ("" when it did)."""
        turn_id = uuid.uuid4().hex[:12]
        key = inbound.session_key
        with structlog.contextvars.bound_contextvars(turn=turn_id):
            async with self.locks.hold(key):
                reply = await self.running.run(key, self._turn(inbound, turn_id, replier))
        return reply or ""

    async def _turn(self, inbound: Inbound, turn_id: str, replier: Replier) -> str:
        session = await self.sessions.load(inbound.session_key)
        if session.metadata.get(LAST_INBOUND) == inbound.id:
            log.info("turn_already_answered", inbound=inbound.id)
            return _last_reply(session)
        await replier.acknowledge()
        session = await self._begin(session, inbound, replier)
        log.info("turn_start", chars=len(inbound.text), attachments=len(inbound.attachments))
        async with replier.typing(), live_reply(replier) as live:
            try:
                ctx = await self._context(inbound, turn_id, session)
                ctx.live = live
                ctx = await self._run(ctx)
            except StopTurn as stop:
                return stop.reply or ""
            except LLMError as exc:
                log.warning("turn_llm_failed", error=type(exc).__name__, cause=str(exc.cause))
                return failures.tell(exc, owner=self._owner_chat(inbound))
        if self.chatter is not None:  # shown once: a turn that failed shows it again
            await self.chatter.drop(inbound.session_key, {said.id for said in ctx.chatter})
        log.info("turn_done", reply_chars=len(ctx.reply or ""))
        return ctx.reply or ""

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

    async def _run(self, ctx: TurnContext) -> TurnContext:
        """Run the pipeline; after a context overflow, compact once and run the turn again
        (its context built anew, within a window the provider may have just stated). The
        context that ran to the end."""
        try:
            await self.pipeline.run(ctx)
            return ctx
        except ContextOverflow:
            if self.compactor is None:
                raise
            retry, compacted = await self._compacted(ctx, self.compactor)
        log.info("turn_retry_after_overflow", messages=len(retry.session.messages))
        try:
            await self.pipeline.run(retry)
        except ContextOverflow as exc:
            log.warning("turn_overflow_again", compacted=compacted)
            raise StopTurn(TOO_LONG if compacted else MESSAGE_TOO_LONG) from exc
        return retry

    async def _compacted(self, ctx: TurnContext, compactor: Compactor) -> tuple[TurnContext, bool]:
        """A fresh context for the same turn over the compacted (and saved) session, and
        whether compacting changed it."""
        log.warning("turn_context_overflow", messages=len(ctx.session.messages))
        result = await compactor.compact(
            ctx.session,
            keep=self.overflow_keep,
            reason="overflow",
            scope=ctx.scope,
            keep_tokens=compactor.room(ctx.session, share=OVERFLOW_KEEP_SHARE),
        )
        fresh = TurnContext(
            inbound=ctx.inbound,
            turn_id=ctx.turn_id,
            scope=ctx.scope,
            session=result.session,
            user_message=ctx.user_message,
            live=ctx.live,
            chatter=ctx.chatter,
            images=ctx.images,
            attached=ctx.attached,
            written=list(ctx.written),
        )
        return fresh, result.compacted

    async def _begin(self, session: Session, inbound: Inbound, replier: Replier) -> Session:
        """The session this turn continues: the user hears first when a damaged file was set
        aside, and when a stale conversation was closed and a new one started."""
        if RECOVERED_FROM in session.metadata:
            metadata = {k: v for k, v in session.metadata.items() if k != RECOVERED_FROM}
            session = replace(session, metadata=metadata)
            await self.sessions.save(session)  # told once, even if this turn fails
            await self.delivery.notice(DAMAGED_SESSION, replier)
        if self.renewal is None or (reason := self.renewal.stale(session)) is None:
            return session
        async with replier.typing():
            renewal = await self.renewal.renew(
                session, self.access.scope_for(inbound), reason=reason
            )
        await self.delivery.notice(renewal.notice, replier)
        return renewal.session

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
