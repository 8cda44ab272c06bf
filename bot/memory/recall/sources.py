"""What recall reads, built once from settings: the structured items (their store, their
keeper, their last-used marks) and the search index with its embedder (`ItemsAndIndex`). The
CLI's `memory` commands build it alone (no model, no Telegram). The embedder
(`bot.llm.embeddings.embedder_loader`) is checked now and loaded when the index opens, in a
worker thread (`IndexService`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.index import MemoryIndex
from bot.index.service import IndexService
from bot.index.sync.transcripts import TranscriptSource
from bot.llm.embeddings import embedder_loader
from bot.memory.items.indexing import ItemSource
from bot.memory.items.keeper import ItemKeeper
from bot.memory.items.store import ItemStore
from bot.memory.items.usage import UsageSaver
from bot.memory.recall.retrieval import MemoryRetriever
from bot.memory.recall.section import Count
from bot.settings import Settings
from bot.storage.files import Locks
from bot.storage.workspace import Workspace


@dataclass(frozen=True)
class ItemsAndIndex:
    """Search and structured items: systems 20, 40, 50, 55, the memory tools and the CLI."""

    index: IndexService  # `.current`: the open `MemoryIndex` or None; `.search(...)` blocking
    items: ItemStore
    item_keeper: ItemKeeper  # every change to items (called by the `MemoryWriter`)
    retriever: MemoryRetriever  # the memory pack
    usage: UsageSaver  # a service: writes the items' last-used marks now and then, and at stop

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        workspace: Workspace,
        locks: Locks,
        count: Count,
        now: Callable[[], datetime],
        *,
        api_key: str | None,
    ) -> ItemsAndIndex:
        store = ItemStore(workspace, locks)
        # with replicas, the index (this replica's own) catches up after the start: a replica
        # answers before its first walk over the shared documents
        replicated = settings.store.url is not None
        opener = _index_opener(settings, workspace, api_key=api_key)
        days = settings.memory.items.episodic_days
        return cls(
            index=IndexService(opener, catch_up_at_start=not replicated),
            items=store,
            item_keeper=ItemKeeper.from_settings(settings.memory, store, now),
            retriever=MemoryRetriever(store, count, now=now, episodic_days=days),
            usage=UsageSaver(store),
        )


def _index_opener(
    settings: Settings, workspace: Workspace, *, api_key: str | None
) -> Callable[[], MemoryIndex] | None:
    """How to open the index (None when recall is off); the embedder is checked now."""
    rag = settings.rag
    if not rag.enabled:
        return None
    load = embedder_loader(
        rag, llm_base_url=settings.llm.base_url, api_key=api_key, models_dir=workspace.models_dir
    )
    timeout = settings.llm.timeout

    def open_index() -> MemoryIndex:
        return MemoryIndex(
            workspace.memory_root,
            workspace.index_dir,
            embedder=load(timeout),
            min_similarity=rag.min_similarity,
            fusion=rag.fusion,
            readers=(TranscriptSource(workspace.sessions_dir), ItemSource(workspace.memory_root)),
            documents=workspace.documents,
        )

    return open_index
