"""A turn over its context window: when the model says the prompt is over its window (or the
meter says it would be, and nothing is sent), the session is compacted once and the same turn
runs again, its context built anew within a window the provider may have just stated; if it
still does not fit, the user is told so (`StopTurn`)."""

from __future__ import annotations

import structlog

from bot.conversation.compaction import Compactor
from bot.errors import ContextOverflow
from bot.pipeline import Pipeline, StopTurn, TurnContext

log = structlog.get_logger(__name__)
KEEP_SHARE = 0.5  # of the conversation's room in the window: kept after an overflow

TOO_LONG = (
    "This conversation is too long for the model even after compacting it. Use /new to start fresh."
)
NO_SUMMARY = (
    "The model could not summarise our older messages, and the conversation no longer fits its "
    "window (nothing was dropped). Try again in a while, or /new to start fresh; your memory "
    "stays."
)
MESSAGE_TOO_LONG = (
    "This message does not fit the model's context window. Please send a shorter one, or split "
    "it in parts."
)


class OverflowRetry:
    """The pipeline, run once more over a compacted session after a context overflow."""

    def __init__(
        self,
        pipeline: Pipeline,
        compactor: Compactor | None = None,  # None: no compaction and retry after an overflow
        *,
        keep: int = 10,  # messages the overflow compaction keeps
    ) -> None:
        self.pipeline = pipeline
        self.compactor = compactor
        self.keep = keep

    async def run(self, ctx: TurnContext) -> TurnContext:
        """Run the pipeline; after a context overflow, compact once and run the turn again.
        The context that ran to the end."""
        try:
            await self.pipeline.run(ctx)
            return ctx
        except ContextOverflow:
            if self.compactor is None:
                raise
            retry, words = await self._compacted(ctx, self.compactor)
        log.info("turn_retry_after_overflow", messages=len(retry.session.messages))
        try:
            await self.pipeline.run(retry)
        except ContextOverflow as exc:
            log.warning("turn_overflow_again", compacted=words == TOO_LONG)
            raise StopTurn(words) from exc
        return retry

    async def _compacted(self, ctx: TurnContext, compactor: Compactor) -> tuple[TurnContext, str]:
        """A fresh context for the same turn over the compacted (and saved) session, and what
        to tell the user if it is still too long: compacting did not help, the summary
        failed, or there was nothing to compact (the message itself is too long)."""
        log.warning("turn_context_overflow", messages=len(ctx.session.messages))
        result = await compactor.compact(
            ctx.session,
            keep=self.keep,
            reason="overflow",
            scope=ctx.scope,
            keep_tokens=compactor.room(ctx.session, share=KEEP_SHARE),
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
        if result.compacted:
            return fresh, TOO_LONG
        return fresh, NO_SUMMARY if result.failed else MESSAGE_TOO_LONG
