"""Where memory tags land: `<memory>` in the turn's scope, `<chat-memory>` in the chat's own
memory, `<working-memory>` replacing the session's snapshot. Each store is best-effort.

The facts of `<memory>` and `<chat-memory>` also become SEMANTIC memory items in the same
scope (references "tag:memory" / "tag:chat-memory"), when a writer is given; the items written
are returned for the search index.

Privacy (DESIGN §3): the turn's scope is global only in an owner's private chat, so a
`<memory>` tag written in a group stays in that group's memory.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Protocol

import structlog

from bot.memory.notes.long_term import LongTermMemory
from bot.memory.notes.tags import ExtractedTags
from bot.memory.notes.working import WorkingMemory
from bot.models import MemoryItem, MemoryScope

log = structlog.get_logger(__name__)
SECTION = "Remembered"


class FactWriter(Protocol):
    """What tags need of the item writer (`MemoryWriter.add_facts`)."""

    async def add_facts(
        self, scope: MemoryScope, facts: Iterable[str], *, source: str
    ) -> list[MemoryItem]: ...


@dataclass(frozen=True)
class Stored:
    ok: bool  # False if any store failed (it is logged)
    items: tuple[MemoryItem, ...]  # the semantic items written or reinforced


class TagStore:
    def __init__(
        self, long_term: LongTermMemory, working: WorkingMemory, facts: FactWriter | None = None
    ) -> None:
        self.long_term = long_term
        self.working = working
        self.facts = facts

    async def store(self, tags: ExtractedTags, *, scope: MemoryScope, session_key: str) -> Stored:
        """Store every kind of tag `tags` holds."""
        ok, items = True, []
        if tags.memories:
            write = self.long_term.append_facts(scope, tags.memories, section=SECTION)
            ok &= await _attempt("memory", write)
            items += await self._items(scope, tags.memories, "tag:memory")
        if tags.chat_memories:
            chat = MemoryScope(chat_key=session_key)
            write = self.long_term.append_facts(chat, tags.chat_memories, section=SECTION)
            ok &= await _attempt("chat-memory", write)
            items += await self._items(chat, tags.chat_memories, "tag:chat-memory")
        if tags.working_memory is not None:
            snapshot = self.working.write(session_key, tags.working_memory)
            ok &= await _attempt("working-memory", snapshot)
        log.info(
            "memory_tags",
            memories=len(tags.memories),
            chat_memories=len(tags.chat_memories),
            working_memory=tags.working_memory is not None,
            stored=ok,
            items=len(items),
        )
        return Stored(ok, tuple(items))

    async def _items(
        self, scope: MemoryScope, facts: Iterable[str], source: str
    ) -> list[MemoryItem]:
        """The facts as semantic items; best-effort (the markdown copy is the one that counts)."""
        if self.facts is None:
            return []
        try:
            return await self.facts.add_facts(scope, facts, source=source)
        except Exception:
            log.warning("memory_tag_items_failed", source=source, exc_info=True)
            return []


async def _attempt(tag: str, write: Awaitable[object]) -> bool:
    """A best-effort boundary: a failed store is logged, never raised."""
    try:
        await write
    except Exception:
        log.warning("memory_tag_store_failed", tag=tag, exc_info=True)
        return False
    return True
