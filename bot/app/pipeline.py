"""Composition of a turn: prompt accounting and compaction, the memory flush, the model's tools,
LightRAG, the reminders' tool and system, the ordered pipeline of systems, and the preview of a
chat's next prompt. Part of the composition root (see `bot.app`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.app.core import Core
from bot.app.memory import ItemsAndIndex, Memory, build_memory_prompt
from bot.app.reminders import Reminders, build_reminders
from bot.conversation.compaction import Compactor
from bot.conversation.flush import MemoryFlush
from bot.index.lightrag import LightRagBackend
from bot.llm.client import LLM
from bot.llm.inspection import LastRequests
from bot.llm.meter import PromptMeter
from bot.memory.cited import CitedOrigins
from bot.memory.notes.tags import TAG_INSTRUCTIONS
from bot.memory.upkeep.consolidation import Consolidator
from bot.memory.writer import MemoryWriter
from bot.models import ToolSpec
from bot.pipeline import BestEffort, Pipeline
from bot.settings import Settings
from bot.storage.sessions import SessionStore
from bot.storage.workspace import Workspace
from bot.systems.compaction import AutoCompaction
from bot.systems.context import ContextBuilding
from bot.systems.flush import PreCompactionFlush, flush_trigger
from bot.systems.indexing import RagIndexing
from bot.systems.persist import MemoryPersist
from bot.systems.tags import MemoryTags
from bot.systems.tool_loop import ToolLoop
from bot.systems.truth import FilesFirst
from bot.tools.clock import CurrentTime
from bot.tools.memory_edit import MemoryEdit
from bot.tools.memory_get import MemoryGet
from bot.tools.memory_items import MemoryAdd, MemoryForget, MemoryPromote, MemoryUpdate
from bot.tools.memory_search import RECALL_INSTRUCTIONS, MemorySearch
from bot.tools.registry import ToolRegistry
from bot.turn.preview import PromptPreview


@dataclass(frozen=True)
class Compaction:
    """Prompt accounting and session compaction: system 18, /compact, /status, the runner."""

    meter: PromptMeter
    compactor: Compactor
    enabled: bool  # automatic compaction: system 18 and the overflow retry
    keep: int  # messages kept by system 18 and /compact
    overflow_keep: int  # after a context overflow the full `keep` was too much: half of it


def build_compaction(
    settings: Settings, core: Core, now: Callable[[], datetime], *, tools: Sequence[ToolSpec]
) -> Compaction:
    memory, windows = core.memory, core.windows
    config = settings.compaction
    # Until a turn has measured the real system prompt: persona and instructions, and memory.
    persona = memory.tokens.count(settings.persona) + memory.tokens.count(_instructions(settings))
    meter = PromptMeter(
        memory.tokens,
        windows,
        settings.llm.model,
        system_tokens=persona,
        tools=tools,
        max_output_tokens=settings.llm.max_output_tokens,
    )
    compactor = Compactor(
        llm=core.spending.llm("compaction"),
        model=settings.llm.fast_model or settings.llm.model,
        sessions=core.sessions,
        history=core.writer,
        meter=meter,
        now=now,
        temperature=config.summary_temperature,
        max_tokens=config.summary_max_tokens,
        timeout=config.summary_timeout,
        message_chars=config.message_chars,
    )
    keep = config.keep_last_messages
    return Compaction(
        meter=meter,
        compactor=compactor,
        enabled=config.enabled,
        keep=keep,
        overflow_keep=max(2, keep // 2),
    )


def _build_flush(
    settings: Settings,
    sessions: SessionStore,
    llm: LLM,
    writer: MemoryWriter,
    compaction: Compaction,
    now: Callable[[], datetime],
) -> PreCompactionFlush | None:
    config = settings.compaction
    if not (config.enabled and config.flush_enabled):
        return None
    flush = MemoryFlush(
        llm,
        writer,
        instructions=TAG_INSTRUCTIONS,
        model=settings.llm.model,
        timeout=config.summary_timeout,  # a silent turn for the same compaction: the same bound
    )
    trigger = flush_trigger(
        compaction.meter.window,
        threshold=config.threshold,
        reserve_floor=config.reserve_tokens_floor,
        soft=config.soft_threshold_tokens,
    )
    return PreCompactionFlush(flush, compaction.meter, sessions, trigger=trigger, now=now)


def build_lightrag(settings: Settings, now: Callable[[], datetime]) -> LightRagBackend | None:
    """The LightRAG server when `rag.backend = "lightrag"`: it gets the owner's exchanges
    (system 55) and adds hits to the owner's `# Relevant Memory` and `memory_search`; the
    embedded index keeps running for memory files and every chat's scope."""
    rag = settings.rag
    if not (rag.enabled and rag.backend == "lightrag"):
        return None
    key = rag.lightrag_api_key.get_secret_value() if rag.lightrag_api_key else None
    return LightRagBackend(
        rag.lightrag_url,
        api_key=key or None,
        mode=rag.lightrag_mode,
        timeout=rag.lightrag_timeout,
        now=now,
    )


OFFERED = (  # the tools' kinds, in the order offered (`build_tools`; the eval counts their specs)
    CurrentTime,
    MemorySearch,
    MemoryGet,
    MemoryAdd,
    MemoryUpdate,
    MemoryPromote,
    MemoryForget,
    MemoryEdit,
)


def build_tools(
    settings: Settings,
    workspace: Workspace,
    items_index: ItemsAndIndex,
    now: Callable[[], datetime],
    *,
    writer: MemoryWriter,
    lightrag: LightRagBackend | None,
) -> ToolRegistry:
    """The model's tools: the clock, reading memory files, the structured items, and — when
    recall is on — `memory_search`."""
    search = MemorySearch(
        items_index.index,
        default_k=settings.rag.search_k,
        remote=lightrag,
        origins=CitedOrigins(workspace.memory_root, workspace.documents),
    )
    return ToolRegistry(
        [
            CurrentTime(now),
            *([search] if settings.rag.enabled else []),
            MemoryGet(workspace.memory_root, workspace.documents, items_index.items),
            MemoryAdd(writer),
            MemoryUpdate(writer),
            MemoryPromote(writer),
            MemoryForget(writer, undo_minutes=settings.memory.undo_minutes),
            MemoryEdit(writer),
        ]
    )


def _instructions(settings: Settings) -> str:
    """How to remember (tags) and, with `memory_search` offered, how to recall."""
    if not settings.rag.enabled:
        return TAG_INSTRUCTIONS
    return f"{TAG_INSTRUCTIONS}\n\n{RECALL_INSTRUCTIONS}"


def build_context(
    settings: Settings,
    memory: Memory,
    items_index: ItemsAndIndex,
    compaction: Compaction,
    now: Callable[[], datetime],
    *,
    lightrag: LightRagBackend | None,
) -> ContextBuilding:
    """System 20: a turn's prompt (also `python -m bot prompt`'s, through `PromptPreview`)."""
    return ContextBuilding(
        persona=settings.persona,
        instructions=_instructions(settings),
        memory=build_memory_prompt(
            settings, items_index, memory.markdown, memory.count, remote=lightrag
        ),
        notes=memory.notes.format,
        now=now,
        memory_room=compaction.meter.memory_room,
        context_role=settings.llm.context_role,
    )


@dataclass(frozen=True)
class Turn:
    """What a turn runs on beside the core: its pipeline and the pieces it is made of, and
    the preview of a chat's next prompt (how full it is: /status, /compact, `bot prompt`)."""

    lightrag: LightRagBackend | None
    tools: ToolRegistry
    reminders: Reminders
    compaction: Compaction
    sent: LastRequests  # the last request of each chat (/context)
    context: ContextBuilding
    pipeline: Pipeline
    preview: PromptPreview


def build_turn(settings: Settings, core: Core, now: Callable[[], datetime]) -> Turn:
    """The turn's pieces, then its pipeline (answering with the model metered as replies)."""
    memory, items_index = core.memory, core.items_index
    lightrag = build_lightrag(settings, now)
    tools = build_tools(
        settings, core.workspace, items_index, now, writer=core.writer, lightrag=lightrag
    )
    reminders = build_reminders(settings, core.workspace, memory.file_locks, now, tools=tools)
    compaction = build_compaction(settings, core, now, tools=tools.specs)
    context = build_context(settings, memory, items_index, compaction, now, lightrag=lightrag)
    sent = LastRequests()
    pipeline = _pipeline(
        settings,
        core,
        now,
        context=context,
        compaction=compaction,
        tools=tools,
        sent=sent,
        lightrag=lightrag,
    )
    preview = PromptPreview(  # `python -m bot prompt`: system 20, as a turn would run it
        context=context,
        sessions=core.sessions,
        access=core.steering.gate.access,
        tools=tools.specs,
        meter=compaction.meter,
        now=now,
    )
    return Turn(
        lightrag=lightrag,
        tools=tools,
        reminders=reminders,
        compaction=compaction,
        sent=sent,
        context=context,
        pipeline=reminders.into(pipeline),
        preview=preview,
    )


def _pipeline(
    settings: Settings,
    core: Core,
    now: Callable[[], datetime],
    *,
    context: ContextBuilding,
    compaction: Compaction,
    tools: ToolRegistry,
    sent: LastRequests,
    lightrag: LightRagBackend | None,
) -> Pipeline:
    sessions, writer = core.sessions, core.writer
    flush = _build_flush(settings, sessions, core.spending.llm("flush"), writer, compaction, now)
    loop = ToolLoop(
        core.spending.llm("reply"),
        tools,
        max_steps=settings.llm.max_tool_steps,
        now=now,
        meter=compaction.meter,
        sent=sent,
    )
    indexing = RagIndexing(core.workspace, index=core.items_index.index, remote=lightrag)
    return Pipeline(
        [
            *([BestEffort(flush)] if flush else []),
            BestEffort(_auto_compaction(settings, compaction)),
            BestEffort(FilesFirst(writer)),
            context,
            loop,
            MemoryTags(writer, core.steering.receipts),
            _persist(settings, sessions, writer, core.consolidator, compaction, now),
            BestEffort(indexing),
        ]
    )


def _auto_compaction(settings: Settings, compaction: Compaction) -> AutoCompaction:
    return AutoCompaction(
        compaction.compactor,
        compaction.meter,
        enabled=compaction.enabled,
        threshold=settings.compaction.threshold,
        keep=compaction.keep,
    )


def _persist(
    settings: Settings,
    sessions: SessionStore,
    writer: MemoryWriter,
    consolidator: Consolidator,
    compaction: Compaction,
    now: Callable[[], datetime],
) -> MemoryPersist:
    return MemoryPersist(
        sessions,
        writer,
        now=now,
        consolidator=consolidator,
        memory_window=settings.memory.memory_window,
        keep_messages=settings.memory.keep_messages,
        meter=compaction.meter,
    )
