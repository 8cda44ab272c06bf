"""System 40, memory tags: store the final reply's `<memory>`, `<chat-memory>` and
`<working-memory>` tags and strip them from what the user sees (seed 002).

Only the model's final reply is parsed: tags in the user's message or in tool results are data
(DESIGN §3). `<memory>` goes to the turn's scope, which is the global memory only in an owner's
private chat; `<chat-memory>` goes to this chat's own memory. The tags are stripped first; each
store is best-effort (logged), so a storage failure never costs the user the reply.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import replace

import structlog

from bot.memory.long_term import LongTermMemory
from bot.memory.tags import ExtractedTags, extract_tags
from bot.memory.working import WorkingMemory
from bot.models import MemoryScope
from bot.pipeline import TurnContext
from bot.systems.tool_loop import EMPTY_REPLY

log = structlog.get_logger(__name__)
SECTION = "Remembered"
ACKNOWLEDGEMENT = "Noted."
NOT_SAVED = "Sorry, I couldn't save that to memory."


class MemoryTags:
    order = 40
    name = "memory-tags"

    def __init__(self, long_term: LongTermMemory, working: WorkingMemory) -> None:
        self.long_term = long_term
        self.working = working

    async def process(self, ctx: TurnContext) -> None:
        if ctx.reply is None:
            return
        tags = extract_tags(ctx.reply)
        if tags.text == ctx.reply and not tags.found:
            return
        _show(ctx, tags.text or (ACKNOWLEDGEMENT if tags.found else EMPTY_REPLY))
        stored = await self._store(ctx, tags)
        if not tags.text and not stored:
            _show(ctx, NOT_SAVED)

    async def _store(self, ctx: TurnContext, tags: ExtractedTags) -> bool:
        """Store every kind of tag the reply holds; False if any store failed."""
        key = ctx.inbound.session_key
        ok = True
        if tags.memories:
            write = self.long_term.append_facts(ctx.scope, tags.memories, section=SECTION)
            ok &= await _attempt("memory", write)
        if tags.chat_memories:
            chat = MemoryScope(chat_key=key)
            write = self.long_term.append_facts(chat, tags.chat_memories, section=SECTION)
            ok &= await _attempt("chat-memory", write)
        if tags.working_memory is not None:
            ok &= await _attempt("working-memory", self.working.write(key, tags.working_memory))
        log.info(
            "memory_tags",
            memories=len(tags.memories),
            chat_memories=len(tags.chat_memories),
            working_memory=tags.working_memory is not None,
            stored=ok,
        )
        return ok


async def _attempt(tag: str, write: Awaitable[object]) -> bool:
    """A best-effort boundary: a failed store is logged, never raised."""
    try:
        await write
    except Exception:
        log.warning("memory_tag_store_failed", tag=tag, exc_info=True)
        return False
    return True


def _show(ctx: TurnContext, text: str) -> None:
    """Set the reply, and the final assistant message the session stores, to `text`."""
    ctx.reply = text
    for index in range(len(ctx.new_messages) - 1, -1, -1):
        if ctx.new_messages[index].role == "assistant":
            ctx.new_messages[index] = replace(ctx.new_messages[index], content=text)
            return
