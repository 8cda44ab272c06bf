"""The tools offered to the model, in the order offered (`OFFERED`; the eval counts their
specs), built once from settings (`offered_tools`), and what the prompt says of them
(`instructions`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.index.remote import RemoteSearch
from bot.memory.cited import CitedOrigins
from bot.memory.notes.tags import TAG_INSTRUCTIONS
from bot.memory.recall.sources import ItemsAndIndex
from bot.memory.writer import MemoryWriter
from bot.settings import RagSettings, Settings
from bot.storage.workspace import Workspace
from bot.tools.clock import CurrentTime
from bot.tools.memory_edit import MemoryEdit
from bot.tools.memory_get import MemoryGet
from bot.tools.memory_items import MemoryAdd, MemoryForget, MemoryPromote, MemoryUpdate
from bot.tools.memory_search import RECALL_INSTRUCTIONS, MemorySearch
from bot.tools.registry import ToolRegistry

OFFERED = (
    CurrentTime,
    MemorySearch,
    MemoryGet,
    MemoryAdd,
    MemoryUpdate,
    MemoryPromote,
    MemoryForget,
    MemoryEdit,
)


def offered_tools(
    settings: Settings,
    workspace: Workspace,
    writer: MemoryWriter,
    sources: ItemsAndIndex,
    now: Callable[[], datetime],
    *,
    remote: RemoteSearch | None,
) -> ToolRegistry:
    """The clock, reading memory files, the structured items, and — when recall is on —
    `memory_search` (with `remote`'s hits beside the index's)."""
    search = MemorySearch(
        sources.index,
        default_k=settings.rag.search_k,
        remote=remote,
        origins=CitedOrigins(workspace.memory_root, workspace.documents),
    )
    return ToolRegistry(
        [
            CurrentTime(now),
            *([search] if settings.rag.enabled else []),
            MemoryGet(workspace.memory_root, workspace.documents, sources.items),
            MemoryAdd(writer),
            MemoryUpdate(writer),
            MemoryPromote(writer),
            MemoryForget(writer, undo_minutes=settings.memory.undo_minutes),
            MemoryEdit(writer),
        ]
    )


def instructions(rag: RagSettings) -> str:
    """How to remember (tags) and, with `memory_search` offered, how to recall."""
    if not rag.enabled:
        return TAG_INSTRUCTIONS
    return f"{TAG_INSTRUCTIONS}\n\n{RECALL_INSTRUCTIONS}"
