"""Structured items in the search index: one document per item, cited by the file that holds it.

An item's document is its text, under its own id, in its scope (the scope key: "" for the
owner's global memory), at its `updated_at`, with its salience. Its citation path is its JSONL
file relative to `memory/`, the id as a fragment — `items/semantic.jsonl#s-1a2b3c4d5e` — so a
hit names both where the item lives and the id the memory tools take. A forgotten item leaves
the index; a decayed one stays, with the salience it had when it was last indexed.

The index never holds the only copy: `add_all` puts every item back after a rebuild. As an app
service (started after the `IndexService`) it does so at start when the index holds no item
(the index folder was deleted); `python -m bot memory reindex` always does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path

import structlog

from bot.index import Document, MemoryIndex
from bot.index.service import IndexService
from bot.memory.items.store import ItemStore
from bot.memory.items.writer import MemoryWriter
from bot.models import GLOBAL_SCOPE, MemoryItem, MemoryLayer, MemoryScope
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)
KIND = "item"


class ItemIndexer:
    def __init__(self, workspace: Workspace, store: ItemStore, index: IndexService) -> None:
        self.workspace = workspace
        self.store = store
        self.index = index

    async def start(self) -> None:
        index = self.index.current
        if index is None:
            return
        try:
            await asyncio.to_thread(self.add_missing, index)
        except Exception:  # the service boundary: search works on, without the items
            log.warning("index_items_restore_failed", exc_info=True)

    async def stop(self) -> None:
        return None

    async def add(self, items: Sequence[MemoryItem]) -> int:
        """Index (or drop, when forgotten) `items` in the open index; how many were indexed.
        Nothing happens when no index is open."""
        index = self.index.current
        if index is None or not items:
            return 0
        return await asyncio.to_thread(self.write, index, items)

    def write(self, index: MemoryIndex, items: Sequence[MemoryItem]) -> int:
        """Blocking `add` into a given index."""
        latest = {item.id: item for item in items}  # a reinforced item may come twice
        for item in latest.values():
            if item.status == "forgotten":
                index.remove_document(item.id)
        documents = [self.document(i) for i in latest.values() if i.status != "forgotten"]
        index.add_documents(documents)
        return len(documents)

    def document(self, item: MemoryItem) -> Document:
        return Document(
            doc_id=item.id,
            text=item.text,
            scope=item.scope,
            kind=KIND,
            salience=item.salience,
            at=item.updated_at,
            path=f"{self.path(item)}#{item.id}",
        )

    def path(self, item: MemoryItem) -> str:
        """The item's file, relative to `memory/` (POSIX)."""
        found = self.store.path_of(item.memory_scope, item.id)
        home = found or self.store.home_path(item.memory_scope, item.layer, item.created_at.date())
        return Path(home).relative_to(self.workspace.memory_root).as_posix()

    def add_all(self, index: MemoryIndex) -> int:
        """Every item of every scope that is not forgotten, in one write per scope (blocking)."""
        indexed = 0
        for scope in [GLOBAL_SCOPE, *self.workspace.chat_scopes()]:
            items = [
                item
                for layer in MemoryLayer
                for item in self.store.items(scope, layer)
                if item.status != "forgotten"
            ]
            indexed += self.write(index, items)
        return indexed

    def add_missing(self, index: MemoryIndex) -> int:
        """`add_all` when the index holds no item at all (it was deleted or is new)."""
        if index.stats().chunks.get(KIND, 0):
            return 0
        indexed = self.add_all(index)
        if indexed:
            log.info("index_items_restored", items=indexed)
        return indexed


class IndexedFacts:
    """`add_facts` whose items are indexed at once: for writers outside a turn (consolidation),
    whose items no system 55 will see."""

    def __init__(self, writer: MemoryWriter, indexer: ItemIndexer) -> None:
        self.writer = writer
        self.indexer = indexer

    async def add_facts(
        self, scope: MemoryScope, facts: Iterable[str], *, source: str
    ) -> list[MemoryItem]:
        items = await self.writer.add_facts(scope, facts, source=source)
        try:
            await self.indexer.add(items)
        except Exception:  # the index is rebuildable: the items are stored
            log.warning("index_items_failed", source=source, exc_info=True)
        return items
