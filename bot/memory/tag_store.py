"""Where memory tags land: `<memory>` in the turn's scope, `<chat-memory>` in the chat's own
memory, `<working-memory>` replacing the session's snapshot. Each store is best-effort.

Privacy (DESIGN §3): the turn's scope is global only in an owner's private chat, so a
`<memory>` tag written in a group stays in that group's memory.
"""

from __future__ import annotations

from collections.abc import Awaitable

import structlog

from bot.memory.long_term import LongTermMemory
from bot.memory.tags import ExtractedTags
from bot.memory.working import WorkingMemory
from bot.models import MemoryScope

log = structlog.get_logger(__name__)
SECTION = "Remembered"


class TagStore:
    def __init__(self, long_term: LongTermMemory, working: WorkingMemory) -> None:
        self.long_term = long_term
        self.working = working

    async def store(self, tags: ExtractedTags, *, scope: MemoryScope, session_key: str) -> bool:
        """Store every kind of tag `tags` holds; False if any store failed (it is logged)."""
        ok = True
        if tags.memories:
            write = self.long_term.append_facts(scope, tags.memories, section=SECTION)
            ok &= await _attempt("memory", write)
        if tags.chat_memories:
            chat = MemoryScope(chat_key=session_key)
            write = self.long_term.append_facts(chat, tags.chat_memories, section=SECTION)
            ok &= await _attempt("chat-memory", write)
        if tags.working_memory is not None:
            snapshot = self.working.write(session_key, tags.working_memory)
            ok &= await _attempt("working-memory", snapshot)
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
