"""System 50, memory persist: save the session with the exchange, let the session's window
trim it (`bot.conversation.window`: past `memory_window` messages the older part goes to
consolidation and an archive file), then hand the turn to the memory writer
(`MemoryWriter.record_turn`: the daily note line, then the turn's items). Every file it wrote
(the session, a part cut from it, the note, the items' files) goes in `ctx.written`, for system
55 to index.

The session save must succeed (it is the conversation); the writer's part is best-effort: a
failed write is logged and never costs the user the reply. The items the prompt showed
(system 20) are marked used. The session's marks also keep what the prompt meter learnt from
the turn (`bot.llm.meter`). What the model forgot during the turn (`memory_forget`) is saved as
forget leaves it on disk (`unsaid`): the session it loaded before would bring it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from bot.conversation.window import Trimmed
from bot.llm.meter import PromptMeter
from bot.memory.forgetting import unsaid
from bot.memory.items.turn import TurnMemoryEvent
from bot.memory.trust import TurnOrigin
from bot.memory.writer import TurnRecord
from bot.models import (
    ChatMessage,
    MemoryItem,
    MemoryScope,
    Provenance,
    Session,
    SessionMarks,
    scope_key,
)
from bot.pipeline import TurnContext
from bot.storage.sessions import SessionStore
from bot.systems.origin import origin_of


class TurnMemory(Protocol):
    """What system 50 hands the memory writer (`MemoryWriter`)."""

    async def record_turn(self, turn: TurnMemoryEvent) -> TurnRecord: ...

    async def mark_used(self, items: Sequence[MemoryItem], at: datetime) -> None: ...


class Window(Protocol):
    """Where the session's older part leaves it (`bot.conversation.window.SessionWindow`)."""

    async def trim(self, session: Session, scope: MemoryScope, *, at: datetime) -> Trimmed: ...


class MemoryPersist:
    order = 50
    name = "memory-persist"

    def __init__(
        self,
        sessions: SessionStore,
        memory: TurnMemory,
        *,
        window: Window,
        now: Callable[[], datetime],
        meter: PromptMeter | None = None,  # calibrates the prompt estimate after each turn
    ) -> None:
        self.sessions = sessions
        self.memory = memory
        self.window = window
        self.now = now
        self.meter = meter

    async def process(self, ctx: TurnContext) -> None:
        origin = origin_of(ctx)  # of the conversation the turn continued: before it is saved
        carried = origin.carried(ctx.reply) if ctx.reply is not None else None
        await self._save_session(ctx, carried)
        trimmed = await self.window.trim(ctx.session, ctx.scope, at=self.now())
        ctx.session = trimmed.session
        ctx.written += trimmed.written
        if ctx.reply is None:
            return
        event = _event(ctx, ctx.reply, self.now(), origin)
        record = await self.memory.record_turn(replace(event, carried=carried))
        ctx.written += record.paths
        await self.memory.mark_used(ctx.memory_shown, self.now())

    async def _save_session(self, ctx: TurnContext, carried: Provenance | None) -> None:
        """The session with the exchange; its user message keeps what others' words the
        turn carried or drew on (`ChatMessage.origin`): they stay others' when recalled."""
        session, usages = ctx.session, ctx.usages
        user = replace(ctx.user_message, origin=carried.via if carried else None)
        messages = (*session.messages, user, *ctx.new_messages)
        ctx.session = replace(
            session,
            messages=tuple(unsaid(m, ctx.forgotten) for m in messages),
            updated_at=self.now(),
            last_prompt_tokens=usages[-1].prompt_tokens if usages else session.last_prompt_tokens,
            total_prompt_tokens=session.total_prompt_tokens + sum(u.prompt_tokens for u in usages),
            total_completion_tokens=session.total_completion_tokens
            + sum(u.completion_tokens for u in usages),
            marks=self._marks(ctx, session.marks),
        )
        await self.sessions.save(ctx.session)
        ctx.written.append(self.sessions.workspace.session_path(ctx.session.key))

    def _marks(self, ctx: TurnContext, marks: SessionMarks) -> SessionMarks:
        """The message answered, the scope, and what the prompt meter learns from this turn's
        first completion (its prompt was the system prompt, the session before this turn, the
        message's context and the message)."""
        marks = replace(marks, last_inbound=ctx.inbound.id, scope=scope_key(ctx.scope))
        if self.meter is None or not ctx.system_prompt or ctx.images or ctx.attached:
            return marks  # an image's tokens are a guess, a document's would count as the
            # system prompt's: the meter learns from turns of text alone
        learnt = self.meter.calibrate(
            request=ctx.request(),  # the session not saved yet: the one the request carried
            conversation=(*ctx.session.messages, ctx.user_message),
            reported=ctx.usages[0].prompt_tokens if ctx.usages else None,
        )
        factor = marks.token_factor if learnt.factor is None else learnt.factor
        return replace(marks, system_tokens=learnt.system_tokens, token_factor=factor)


def _event(ctx: TurnContext, reply: str, at: datetime, origin: TurnOrigin) -> TurnMemoryEvent:
    tools = (call.name for message in ctx.new_messages for call in message.tool_calls)
    said = unsaid(ctx.user_message, ctx.forgotten).content
    answered = unsaid(ChatMessage(role="assistant", content=reply), ctx.forgotten).content
    return TurnMemoryEvent(
        scope=ctx.scope,
        session_key=ctx.inbound.session_key,
        turn_id=ctx.turn_id,
        user_text=said or "",
        reply=answered or "",
        at=at,
        tool_names=tuple(tools),
        origin=origin.source,
        trusted=origin.trusted,
        joins=ctx.inbound.joins,
    )
