"""A turn's origin as the memory systems (40 tags, 50 persist) and the tools read it: who wrote
the message, whether the turn carried other people's words, and the others' words memory brought
back in it — the conversation's, and what system 20 and the memory tools showed
(`bot.memory.trust`)."""

from __future__ import annotations

from dataclasses import replace

from bot.memory.trust import TurnOrigin, in_conversation, said_by, turn_origin
from bot.pipeline import TurnContext


def origin_of(ctx: TurnContext) -> TurnOrigin:
    """The turn's origin, its tool results so far counted (call it before system 50 saves the
    session: the conversation is the one the turn continued)."""
    results = [
        (message.name or "", message.content or "")
        for message in ctx.new_messages
        if message.role == "tool"
    ]
    said = replace(said_by(ctx.inbound), at=ctx.inbound.received_at)
    conversation = in_conversation(ctx.session.messages, said=said)
    return turn_origin(
        ctx.inbound,
        at=ctx.inbound.received_at,
        attached=ctx.attached,
        chatter=bool(ctx.chatter),
        tool_results=results,
        recalled=(*ctx.recalled, *conversation),
        own=ctx.user_message.content or "",
    )
