"""Composition of a turn: its pieces (`Turn`: the model's tools, prompt accounting and
compaction, the prompt, the preview of a chat's next prompt), then the pipeline of systems over
them. Part of the composition root (see `bot.app`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.app.core import Core
from bot.app.reminders import Reminders, build_reminders
from bot.conversation.closing import ConversationClose
from bot.conversation.compaction import Compactor
from bot.conversation.flush import MemoryFlush
from bot.conversation.window import SessionWindow
from bot.index.lightrag import LightRagBackend
from bot.llm.inspection import LastRequests
from bot.llm.meter import PromptMeter
from bot.memory.cited import CitedOrigins
from bot.memory.notes.tags import TAG_INSTRUCTIONS
from bot.memory.recall.prompt import MemoryPrompt
from bot.pipeline import BestEffort, Pipeline, System
from bot.reminders.prompt import ScheduledInPrompt
from bot.settings import Settings
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


@dataclass(frozen=True)
class Turn:
    """What a turn is made of beside the core: the pieces its pipeline (`build_pipeline`),
    the commands, the reminders and the web page share."""

    lightrag: LightRagBackend | None  # a service when `rag.backend = "lightrag"`
    tools: ToolRegistry
    reminders: Reminders
    closing: ConversationClose  # /new, a stale session's renewal, the window's trimming
    meter: PromptMeter  # the prompt's tokens against the model's window
    compactor: Compactor  # systems 18, /compact, a stale session's summary, the overflow retry
    sent: LastRequests  # the last request of each chat (/context)
    context: ContextBuilding  # system 20 (the preview's, a scheduled task's too)
    preview: PromptPreview  # the next prompt of a chat (/status, /compact, `bot prompt`)


def build_turn(settings: Settings, core: Core, now: Callable[[], datetime]) -> Turn:
    """The turn's pieces, each built once (the pipeline over them: `build_pipeline`)."""
    lightrag = build_lightrag(settings, now)
    tools = build_tools(settings, core, now, lightrag=lightrag)
    reminders = build_reminders(settings, core.workspace, core.store.locks, now, tools=tools)
    # until a turn has measured the real system prompt: persona and instructions, and memory
    persona = core.tokens.count(settings.persona) + core.tokens.count(_instructions(settings))
    meter = PromptMeter(
        core.tokens,
        core.windows,
        settings.llm.model,
        system_tokens=persona,
        tools=tools.specs,  # the `remind` tool's too
        max_output_tokens=settings.llm.max_output_tokens,
    )
    context = _context(settings, core, meter, now, lightrag)
    compactor = _compactor(settings, core, meter, now)
    consolidating = settings.memory.memory_window > 0  # 0 turns consolidation off, /new too
    closing = ConversationClose(
        sessions=core.sessions,
        consolidator=core.consolidator if consolidating else None,
        memory=core.writer,
    )
    return Turn(
        lightrag=lightrag,
        tools=tools,
        reminders=reminders,
        closing=closing,
        meter=meter,
        compactor=compactor,
        sent=LastRequests(),
        context=context,
        preview=PromptPreview(  # `python -m bot prompt`: system 20, as a turn would run it
            context=context,
            sessions=core.sessions,
            access=core.access,
            tools=tools.specs,
            meter=meter,
            now=now,
        ),
    )


def build_pipeline(
    settings: Settings, core: Core, turn: Turn, now: Callable[[], datetime]
) -> Pipeline:
    """The turn's systems (the pipeline runs them in their order: `Pipeline.describe()`)."""
    memory, writer, meter = settings.memory, core.writer, turn.meter
    loop = ToolLoop(
        core.spending.llm("reply"),
        turn.tools,
        max_steps=settings.llm.max_tool_steps,
        now=now,
        meter=meter,
        sent=turn.sent,
    )
    window = SessionWindow(
        turn.closing, memory_window=memory.memory_window, keep_messages=memory.keep_messages
    )
    persist = MemoryPersist(core.sessions, writer, window=window, now=now, meter=meter)
    indexing = RagIndexing(core.workspace, index=core.items_index.index, remote=turn.lightrag)
    shown = settings.reminders.shown_in_prompt
    return Pipeline(
        [
            *_compaction(settings, core, meter, turn.compactor, now),
            BestEffort(FilesFirst(writer)),
            turn.context,
            ScheduledInPrompt(turn.reminders.store, shown=shown),
            loop,
            MemoryTags(writer, core.receipts),
            persist,
            BestEffort(indexing),
        ]
    )


def _context(
    settings: Settings,
    core: Core,
    meter: PromptMeter,
    now: Callable[[], datetime],
    lightrag: LightRagBackend | None,
) -> ContextBuilding:
    """System 20: a turn's prompt (also `python -m bot prompt`'s, through `PromptPreview`)."""
    return ContextBuilding(
        persona=settings.persona,
        instructions=_instructions(settings),
        memory=MemoryPrompt.from_settings(
            settings, core.markdown, core.items_index, core.count, remote=lightrag
        ),
        notes=core.writer.notes.format,
        now=now,
        memory_room=meter.memory_room,
        context_role=settings.llm.context_role,
    )


def _compactor(
    settings: Settings, core: Core, meter: PromptMeter, now: Callable[[], datetime]
) -> Compactor:
    config = settings.compaction
    return Compactor(
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


def _compaction(
    settings: Settings,
    core: Core,
    meter: PromptMeter,
    compactor: Compactor,
    now: Callable[[], datetime],
) -> list[System]:
    """System 18, auto-compaction; before it, when both are on, system 17's silent turn that
    lets the model write durable notes."""
    config = settings.compaction
    compaction = AutoCompaction(
        compactor,
        meter,
        enabled=config.enabled,
        threshold=config.threshold,
        keep=config.keep_last_messages,
    )
    if not (config.enabled and config.flush_enabled):
        return [BestEffort(compaction)]
    flush = MemoryFlush(
        core.spending.llm("flush"),
        core.writer,
        instructions=TAG_INSTRUCTIONS,
        model=settings.llm.model,
        timeout=config.summary_timeout,  # a silent turn for the same compaction: the same bound
    )
    trigger = flush_trigger(
        meter.window,
        threshold=config.threshold,
        reserve_floor=config.reserve_tokens_floor,
        soft=config.soft_threshold_tokens,
    )
    flushing = PreCompactionFlush(flush, meter, core.sessions, trigger=trigger, now=now)
    return [BestEffort(flushing), BestEffort(compaction)]


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


def build_tools(
    settings: Settings,
    core: Core,
    now: Callable[[], datetime],
    *,
    lightrag: LightRagBackend | None,
) -> ToolRegistry:
    """The model's tools: the clock, reading memory files, the structured items, and — when
    recall is on — `memory_search`."""
    workspace, writer = core.workspace, core.writer
    search = MemorySearch(
        core.items_index.index,
        default_k=settings.rag.search_k,
        remote=lightrag,
        origins=CitedOrigins(workspace.memory_root, workspace.documents),
    )
    return ToolRegistry(
        [
            CurrentTime(now),
            *([search] if settings.rag.enabled else []),
            MemoryGet(workspace.memory_root, workspace.documents, core.items_index.items),
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
