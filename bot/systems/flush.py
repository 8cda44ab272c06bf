"""System 17, pre-compaction memory flush: before this compaction cycle ends, one
silent turn lets the model write down what should outlive the summary.

It runs when the estimated prompt crosses `flush_trigger(...)` and at most once per compaction
cycle: the session remembers the cycle (its compaction count) in which it last flushed. The
model's text is never sent to anyone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, replace
from datetime import datetime

import structlog

from bot.conversation.flush import MemoryFlush
from bot.llm.client import LLM
from bot.llm.meter import PromptMeter
from bot.memory.facts import TagSink
from bot.memory.notes.tags import TAG_INSTRUCTIONS
from bot.pipeline import TurnContext
from bot.settings import Settings
from bot.storage.sessions import SessionStore

log = structlog.get_logger(__name__)


def flush_trigger(window: int, *, threshold: float, reserve_floor: int, soft: int) -> int:
    """Prompt tokens at which to flush: `window − reserve − soft` (both scaled down for small
    windows), and never later than compaction itself (`threshold × window`)."""
    reserve = min(reserve_floor, window // 4)
    margin = min(soft, window // 16)
    return min(window - reserve - margin, int(threshold * window))


@dataclass(eq=False)
class PreCompactionFlush:
    order = 17
    name = "memory-flush"

    flush: MemoryFlush
    meter: PromptMeter
    sessions: SessionStore
    _: KW_ONLY
    trigger: int
    now: Callable[[], datetime]

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        llm: LLM,
        memory: TagSink,
        meter: PromptMeter,
        sessions: SessionStore,
        now: Callable[[], datetime],
    ) -> PreCompactionFlush:
        """A silent turn that lets the model write durable notes before compaction runs."""
        config = settings.compaction
        flush = MemoryFlush(
            llm,
            memory,
            instructions=TAG_INSTRUCTIONS,
            model=settings.llm.model,
            timeout=config.summary_timeout,  # a silent turn for the same compaction: its bound
        )
        trigger = flush_trigger(
            meter.window,
            threshold=config.threshold,
            reserve_floor=config.reserve_tokens_floor,
            soft=config.soft_threshold_tokens,
        )
        return cls(flush, meter, sessions, trigger=trigger, now=now)

    async def process(self, ctx: TurnContext) -> None:
        session = ctx.session
        cycle = session.compactions
        if session.marks.flushed_cycle == cycle:
            return
        if not any(message.role == "user" for message in session.messages):
            return  # nothing said yet that compaction could lose
        estimate = self.meter.estimate(session, (ctx.sent(ctx.user_message),))
        if estimate.tokens < self.trigger:
            return
        log.info("memory_flush", estimated_tokens=estimate.tokens, trigger=self.trigger)
        await self.flush.run(session, scope=ctx.scope)
        marks = replace(session.marks, flushed_cycle=cycle, flushed_at=self.now())
        ctx.session = replace(session, marks=marks)
        await self.sessions.save(ctx.session)
