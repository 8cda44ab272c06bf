"""Recall's parts in the composition root: the search index and its embedder, structured items
(`ItemsAndIndex`), and the prompt's memory sections. The CLI's `memory` commands use
`build_items_and_index` alone (no model, no Telegram).

`rag.embedder` picks the index's embedder: "none" (keyword-only), "model2vec" (a local folder,
`rag.model2vec_path`, checked here so a wrong path stops the start with the variable to fix;
without one the hub model `rag.model2vec_model`, fetched once into `workspace/models/` — when
it cannot be, one warning and keyword-only until a later start can) or "openai" (an
OpenAI-compatible `/v1/embeddings`; URL and key fall back to the model's). The embedder is
loaded when the index opens, in a worker thread (`IndexService`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import structlog

from bot.errors import ConfigError
from bot.index import Embedder, MemoryIndex, Model2VecEmbedder
from bot.index.embedding import MODEL2VEC_PATH_VAR, hub_model, model_folder
from bot.index.remote import RemoteSearch
from bot.index.service import IndexService
from bot.index.sync.transcripts import TranscriptSource
from bot.llm.embeddings import OpenAIEmbedder
from bot.memory.items.indexing import ItemSource
from bot.memory.items.keeper import ItemKeeper
from bot.memory.items.store import ItemStore
from bot.memory.items.usage import UsageSaver
from bot.memory.recall.markdown import MarkdownMemory
from bot.memory.recall.prompt import MemoryPrompt, PackLimits
from bot.memory.recall.relevant import RelevantMemory
from bot.memory.recall.retrieval import MemoryRetriever
from bot.memory.recall.scoring import TopK
from bot.settings import ItemSettings, RagSettings, Settings
from bot.storage.files import Locks
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)

Count = Callable[[str], int]
EMBEDDING_KEY_VAR = "BOT_RAG__EMBEDDING_API_KEY"


@dataclass(frozen=True)
class ItemsAndIndex:
    """Search and structured items: systems 20, 40, 50, 55, the memory tools and the CLI."""

    index: IndexService  # `.current`: the open `MemoryIndex` or None; `.search(...)` blocking
    items: ItemStore
    item_keeper: ItemKeeper  # every change to items (called by the `MemoryWriter`)
    retriever: MemoryRetriever  # the memory pack
    usage: UsageSaver  # a service: writes the items' last-used marks now and then, and at stop


def build_items_and_index(
    settings: Settings,
    workspace: Workspace,
    locks: Locks,
    count: Count,
    now: Callable[[], datetime],
    *,
    api_key: str | None,
) -> ItemsAndIndex:
    store = ItemStore(workspace, locks)
    config = settings.memory.items
    keeper = _item_keeper(settings, store, now)
    # with replicas, the index (this replica's own) catches up after the start: a replica
    # answers before its first walk over the shared documents
    replicated = settings.store.url is not None
    opener = _index_opener(settings, workspace, api_key=api_key)
    index = IndexService(opener, catch_up_at_start=not replicated)
    return ItemsAndIndex(
        index=index,
        items=store,
        item_keeper=keeper,
        retriever=MemoryRetriever(store, count, now=now, episodic_days=config.episodic_days),
        usage=UsageSaver(store),
    )


def _item_keeper(settings: Settings, store: ItemStore, now: Callable[[], datetime]) -> ItemKeeper:
    config = settings.memory.items
    return ItemKeeper(
        store,
        now=now,
        promotion_min_confidence=(
            config.promotion_min_confidence if config.promotion_enabled else None
        ),
        decay_days=config.decay_days if config.decay_enabled else None,
        code_aware=config.code_aware_extraction,
        dedup_days=config.episodic_days,
        user_chars=settings.memory.note_user_chars,
        assistant_chars=settings.memory.note_assistant_chars,
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


def embedder_loader(
    rag: RagSettings, *, llm_base_url: str, api_key: str | None, models_dir: Path
) -> Callable[[float], Embedder | None]:
    """A loader of the configured embedder (called with a timeout, in a thread); a missing
    model folder or key is a `ConfigError` now, naming the variable to set."""
    if rag.embedder == "none":
        return lambda timeout: None
    if rag.embedder == "model2vec":
        folder = rag.model2vec_path
        if folder is None:
            model_folder(models_dir, rag.model2vec_model)  # a malformed id stops the start
            return lambda timeout: hub_model(
                rag.model2vec_model, models_dir, hub=rag.model2vec_hub, timeout=timeout
            )
        if not (folder / "config.json").is_file():
            raise ConfigError(f"{MODEL2VEC_PATH_VAR} {folder} holds no model2vec model")
        return lambda timeout: Model2VecEmbedder(folder)
    secret = rag.embedding_api_key.get_secret_value() if rag.embedding_api_key else api_key
    if not secret:
        raise ConfigError(f"{EMBEDDING_KEY_VAR} (or BOT_LLM__API_KEY) is not set")
    base_url = rag.embedding_base_url or llm_base_url
    return lambda timeout: OpenAIEmbedder(
        base_url=base_url,
        api_key=secret,
        model=rag.embedding_model,
        timeout=timeout,
        query_model=rag.embedding_query_model,
        query_prefix=rag.embedding_query_prefix,
        passage_prefix=rag.embedding_passage_prefix,
    )


def build_memory_prompt(
    settings: Settings,
    items_index: ItemsAndIndex,
    markdown: MarkdownMemory,
    count: Count,
    *,
    remote: RemoteSearch | None = None,
) -> MemoryPrompt:
    """System 20's memory: the markdown section, the pack beside it, `# Relevant Memory`."""
    rag = settings.rag
    relevant = RelevantMemory(
        items_index.index,
        count,
        k=rag.relevant_k,
        budget_tokens=rag.relevant_budget_tokens,
        remote=remote,
    )
    return MemoryPrompt(
        markdown,
        retriever=items_index.retriever,
        relevant=relevant if rag.enabled else None,
        limits=pack_limits(settings.memory.items),
    )


def pack_limits(config: ItemSettings) -> PackLimits:
    top_k = TopK(
        working=config.working_top_k,
        episodic=config.episodic_top_k,
        semantic=config.semantic_top_k,
        procedural=config.procedural_top_k,
    )
    return PackLimits(
        top_k=top_k,
        soft_budget_tokens=config.soft_budget_tokens,
        max_budget_tokens=config.max_budget_tokens,
    )
