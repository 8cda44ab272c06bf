"""System 18, auto-compaction: keeps the prompt under `threshold` × the model's window.

When the estimated prompt of this turn (the session, the user's message, the system prompt as
measured last turn) passes the threshold, the session is compacted to its last `keep` messages
and saved before the turn goes on (logged as `[AutoCompact] Context too large: …`). It keeps no
more than `KEEP_SHARE` of the room the conversation has under the threshold, so the next
compaction is many turns away, even in a small window.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import structlog

from bot.conversation.compaction import Compactor
from bot.llm.meter import PromptMeter
from bot.pipeline import TurnContext
from bot.settings import CompactionSettings

log = structlog.get_logger(__name__)
KEEP_SHARE = 0.25  # of the conversation's room: what a compaction keeps at most


@dataclass(eq=False)
class AutoCompaction:
    order = 18
    name = "auto-compaction"

    compactor: Compactor
    meter: PromptMeter
    _: KW_ONLY
    enabled: bool
    threshold: float  # share of the window
    keep: int

    @classmethod
    def from_settings(
        cls, config: CompactionSettings, compactor: Compactor, meter: PromptMeter
    ) -> AutoCompaction:
        return cls(
            compactor,
            meter,
            enabled=config.enabled,
            threshold=config.threshold,
            keep=config.keep_last_messages,
        )

    async def process(self, ctx: TurnContext) -> None:
        if not self.enabled:
            return
        estimate = self.meter.estimate(ctx.session, (ctx.sent(ctx.user_message),))
        limit = int(self.threshold * estimate.window)
        if estimate.tokens <= limit:
            return
        log.info(
            "auto_compact",
            estimated_tokens=estimate.tokens,
            threshold=limit,
            messages=len(ctx.session.messages),
        )
        result = await self.compactor.compact(
            ctx.session,
            keep=self.keep,
            reason="auto",
            scope=ctx.scope,
            keep_tokens=self.compactor.room(ctx.session, share=KEEP_SHARE, under=limit),
        )
        ctx.session = result.session
        after = self.meter.estimate(ctx.session, (ctx.sent(ctx.user_message),)).tokens
        if after > limit:
            log.warning("auto_compact_not_enough", estimated_tokens=after, threshold=limit)
