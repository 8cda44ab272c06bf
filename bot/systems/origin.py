"""A turn's origin as the memory systems (40 tags, 50 persist) and the tools read it: who wrote
the message and whether the turn carried other people's words (`bot.memory.trust`)."""

from __future__ import annotations

from bot.memory.trust import TurnOrigin, turn_origin
from bot.pipeline import TurnContext


def origin_of(ctx: TurnContext) -> TurnOrigin:
    """The turn's origin, its tool results so far counted."""
    results = [
        (message.name or "", message.content or "")
        for message in ctx.new_messages
        if message.role == "tool"
    ]
    return turn_origin(
        ctx.inbound,
        at=ctx.inbound.received_at,
        attached=ctx.attached,
        chatter=bool(ctx.chatter),
        tool_results=results,
    )
