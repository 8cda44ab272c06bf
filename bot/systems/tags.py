"""System 40, memory tags: store the final reply's `<memory>`, `<chat-memory>` and
`<working-memory>` tags and strip them from what the user sees.

Only the model's final reply is parsed: tags in the user's message or in tool results are data,
never instructions, and a tag that only repeats their words is not stored (`without_echoes`).
`<memory>` goes to the turn's scope, which is the global memory only in an owner's private
chat; `<chat-memory>` goes to this chat's own memory; from a turn that carried other
people's words (a document, a forwarded message, group chatter, a tool's output:
`bot.memory.trust`), or drawn from others' words memory brought back in it, they are kept
as quoted material instead, with their source, until an owner keeps one. The
tags are stripped first; each store is best-effort (logged), so a storage failure never costs
the user the reply. Each line added, and each line the memory tools wrote in the turn
(`TurnContext.stored`), gets a receipt (`bot.receipts`), shown after the reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from bot.memory.facts import TagSink
from bot.memory.notes.quoted import Quote
from bot.memory.notes.tags import extract_tags, without_echoes
from bot.models import Inbound, MemoryScope, StoredLine
from bot.pipeline import TurnContext
from bot.systems.origin import origin_of
from bot.systems.tool_loop import EMPTY_REPLY

log = structlog.get_logger(__name__)
ACKNOWLEDGEMENT = "Noted."
NOT_SAVED = "Sorry, I couldn't save that to memory."


class Receipts(Protocol):
    """Where what was stored is told, after the reply (`bot.receipts.ReceiptDesk`)."""

    async def issue(self, inbound: Inbound, stored: Sequence[StoredLine]) -> bool: ...

    async def issue_quotes(
        self, inbound: Inbound, scope: MemoryScope, quotes: Sequence[Quote]
    ) -> None: ...


@dataclass(eq=False)
class MemoryTags:
    order = 40
    name = "memory-tags"

    memory: TagSink
    receipts: Receipts | None = None

    async def process(self, ctx: TurnContext) -> None:
        if ctx.reply is None:
            return
        if ctx.stored and self.receipts is not None:  # what the memory tools wrote
            await self.receipts.issue(ctx.inbound, ctx.stored)
        tags = extract_tags(ctx.reply)
        if tags.text == ctx.reply and not tags.found:
            return
        _show(ctx, tags.text or (ACKNOWLEDGEMENT if tags.found else EMPTY_REPLY))
        tags, echoes = without_echoes(tags, _supplied(ctx))
        if echoes:
            log.info("memory_tag_echo_dropped", tags=echoes)
        if not tags.found:
            return
        stored = await self.memory.store_tags(
            tags,
            scope=ctx.scope,
            session_key=ctx.inbound.session_key,
            turn=ctx.turn_id,
            origin=origin_of(ctx),
        )
        if not tags.text and not stored.ok:
            _show(ctx, NOT_SAVED)
        if self.receipts is not None:
            await self.receipts.issue(ctx.inbound, stored.added)
            await self.receipts.issue_quotes(ctx.inbound, ctx.scope, stored.quoted)


def _supplied(ctx: TurnContext) -> list[str]:
    """What others said in this turn: the user's message and the tool results."""
    tools = [m.content or "" for m in ctx.new_messages if m.role == "tool"]
    return [ctx.user_message.content or "", *tools]


def _show(ctx: TurnContext, text: str) -> None:
    """Set the reply, and the final assistant message the session stores, to `text`."""
    ctx.reply = text
    for index in range(len(ctx.new_messages) - 1, -1, -1):
        if ctx.new_messages[index].role == "assistant":
            ctx.new_messages[index] = replace(ctx.new_messages[index], content=text)
            return
