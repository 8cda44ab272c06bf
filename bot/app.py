"""The composition root: the only place concrete classes are built and wired together."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from bot.access import AccessPolicy
from bot.app_memory import Memory, Recall, build_memory, build_memory_prompt, build_recall
from bot.chats import ChatLocks, RunningTurns
from bot.commands import Commands
from bot.freshness import FreshnessPolicy, SessionRenewal, Summarizer
from bot.index.lightrag import LightRagBackend
from bot.llm.meter import PromptMeter
from bot.llm.openai_chat import OpenAIChat
from bot.llm.windows import load_windows
from bot.memory.compaction import Compactor
from bot.memory.consolidation import Consolidator
from bot.memory.edits import MemoryEdits
from bot.memory.flush import MemoryFlush
from bot.memory.inventory import MemoryInventory
from bot.memory.item_index import IndexedFacts
from bot.memory.log_compaction import LogCompaction
from bot.memory.tag_store import TagStore
from bot.memory.tags import TAG_INSTRUCTIONS
from bot.memory.working import WorkingMemory
from bot.pipeline import BestEffort, Pipeline
from bot.settings import Settings
from bot.storage.inbox import Inbox
from bot.storage.jobs import JobStore
from bot.storage.sessions import SessionStore
from bot.storage.workspace import Workspace
from bot.systems.compaction import AutoCompaction
from bot.systems.context import ContextBuilding
from bot.systems.flush import PreCompactionFlush, flush_trigger
from bot.systems.indexing import RagIndexing
from bot.systems.persist import MemoryPersist
from bot.systems.tags import MemoryTags
from bot.systems.tool_loop import ToolLoop
from bot.tools.clock import CurrentTime
from bot.tools.memory_get import MemoryGet
from bot.tools.memory_items import MemoryAdd, MemoryForget, MemoryPromote, MemoryUpdate
from bot.tools.memory_search import RECALL_INSTRUCTIONS, MemorySearch
from bot.tools.registry import ToolRegistry
from bot.turns import TurnRunner


class Service(Protocol):
    """Background work the app owns: started before the first message, stopped at shutdown."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass
class App:
    runner: TurnRunner
    llm: OpenAIChat
    workspace: Workspace
    now: Callable[[], datetime]
    services: list[Service] = field(default_factory=list)
    recall: Recall | None = None  # the index and structured items (tests, tools)

    async def start(self) -> None:
        for service in self.services:
            await service.start()

    async def aclose(self) -> None:
        for service in reversed(self.services):
            await service.stop()
        await self.llm.close()


def clock(timezone: str) -> Callable[[], datetime]:
    zone = ZoneInfo(timezone)
    return lambda: datetime.now(zone)


@dataclass(frozen=True)
class Compaction:
    """Prompt accounting and session compaction: system 18, /compact, /status, the runner."""

    meter: PromptMeter
    compactor: Compactor
    enabled: bool  # automatic compaction: system 18 and the overflow retry
    keep: int  # messages kept by system 18 and /compact
    overflow_keep: int  # after a context overflow the full `keep` was too much: half of it


def build_app(settings: Settings, *, api_key: str) -> App:
    now = clock(settings.timezone)
    workspace = Workspace(settings.workspace)
    workspace.ensure()
    sessions = SessionStore(workspace, now=now)
    llm = _build_llm(settings, api_key)
    memory = build_memory(settings, workspace, now)
    recall = build_recall(
        settings, workspace, memory.file_locks, memory.count, now, api_key=api_key
    )
    consolidator = _build_consolidator(settings, workspace, llm, memory, recall, now)
    compaction = _build_compaction(settings, sessions, llm, memory, now)
    lightrag = _build_lightrag(settings, now)
    tools = _build_tools(settings, workspace, recall, now, lightrag=lightrag)
    pipeline = _build_pipeline(
        settings,
        sessions,
        llm,
        memory,
        recall,
        consolidator,
        compaction,
        now,
        lightrag=lightrag,
        tools=tools,
    )
    runner = _build_runner(
        settings, workspace, sessions, pipeline, memory, consolidator, compaction, now
    )
    services: list[Service] = [
        recall.index,  # first: opened and synced before anything else starts
        recall.indexer,  # puts the items back into a rebuilt index
        *([recall.decay] if recall.decay else []),
        _build_log_compaction(settings, workspace, memory, now),
        consolidator,
        *([lightrag] if lightrag else []),
    ]
    return App(
        runner=runner, llm=llm, workspace=workspace, now=now, services=services, recall=recall
    )


def _build_runner(
    settings: Settings,
    workspace: Workspace,
    sessions: SessionStore,
    pipeline: Pipeline,
    memory: Memory,
    consolidator: Consolidator,
    compaction: Compaction,
    now: Callable[[], datetime],
) -> TurnRunner:
    locks, running = ChatLocks(), RunningTurns()
    telegram = settings.telegram
    access = AccessPolicy(owner_ids=telegram.owner_ids, allowed_user_ids=telegram.allowed_user_ids)
    consolidating = settings.memory.memory_window > 0  # 0 turns consolidation off, /new too
    active = consolidator if consolidating else None
    commands = Commands(
        sessions=sessions,
        locks=locks,
        running=running,
        model=settings.llm.model,
        pipeline=pipeline.describe(),
        access=access,
        consolidator=active,
        working=memory.working,
        inventory=_build_inventory(workspace, memory, now),
        edits=MemoryEdits(workspace, memory.long_term, memory.file_locks),
        compactor=compaction.compactor,
        meter=compaction.meter,
        history=memory.history,
        keep_last_messages=compaction.keep,
    )
    return TurnRunner(
        pipeline=pipeline,
        sessions=sessions,
        inbox=Inbox(workspace.inbox_dir),
        access=access,
        commands=commands,
        locks=locks,
        running=running,
        now=now,
        compactor=compaction.compactor if compaction.enabled else None,
        overflow_keep=compaction.overflow_keep,
        renewal=_build_renewal(
            settings, sessions, compaction.compactor, active, memory.working, now
        ),
    )


def _build_inventory(
    workspace: Workspace, memory: Memory, now: Callable[[], datetime]
) -> MemoryInventory:
    return MemoryInventory(
        workspace, memory.reader, memory.recall, memory.history, memory.working, now=now
    )


def _build_log_compaction(
    settings: Settings, workspace: Workspace, memory: Memory, now: Callable[[], datetime]
) -> LogCompaction:
    return LogCompaction(
        workspace,
        memory.long_term,
        memory.file_locks,
        retention_days=settings.memory.retention_days,
        now=now,
    )


def _build_llm(settings: Settings, api_key: str) -> OpenAIChat:
    return OpenAIChat(
        base_url=settings.llm.base_url,
        api_key=api_key,
        model=settings.llm.model,
        timeout=settings.llm.timeout,
        max_retries=settings.llm.max_retries,
        temperature=settings.llm.temperature,
        max_tokens=settings.llm.max_output_tokens,
    )


def _build_consolidator(
    settings: Settings,
    workspace: Workspace,
    llm: OpenAIChat,
    memory: Memory,
    recall: Recall,
    now: Callable[[], datetime],
) -> Consolidator:
    return Consolidator(
        llm=llm,
        model=settings.llm.fast_model or settings.llm.model,
        long_term=memory.long_term,
        history=memory.history,
        jobs=JobStore(workspace.consolidation_dir),
        now=now,
        max_memory_size=settings.memory.max_memory_size,
        timeout=settings.memory.consolidation_timeout,
        raw_fallback_messages=settings.memory.raw_fallback_messages,
        raw_fallback_chars=settings.memory.raw_fallback_chars,
        facts=IndexedFacts(recall.writer, recall.indexer),
    )


def _build_renewal(
    settings: Settings,
    sessions: SessionStore,
    summarizer: Summarizer,
    consolidator: Consolidator | None,
    working: WorkingMemory,
    now: Callable[[], datetime],
) -> SessionRenewal:
    policy = FreshnessPolicy(
        daily_reset_hour=settings.session.daily_reset_hour,
        idle_minutes=settings.session.idle_minutes,
        now=now,
    )
    return SessionRenewal(
        policy=policy,
        sessions=sessions,
        summarizer=summarizer,
        consolidator=consolidator,
        working=working,
        now=now,
    )


def _build_compaction(
    settings: Settings,
    sessions: SessionStore,
    llm: OpenAIChat,
    memory: Memory,
    now: Callable[[], datetime],
) -> Compaction:
    config = settings.compaction
    # Until a turn has measured the real system prompt: persona, instructions, memory budget.
    persona = memory.tokens.count(settings.persona) + memory.tokens.count(_instructions(settings))
    meter = PromptMeter(
        memory.tokens,
        load_windows(config.models_file),
        settings.llm.model,
        system_tokens=persona + settings.memory.prompt_budget_tokens,
    )
    compactor = Compactor(
        llm=llm,
        model=settings.llm.fast_model or settings.llm.model,
        sessions=sessions,
        history=memory.history,
        meter=meter,
        now=now,
        temperature=config.summary_temperature,
        max_tokens=config.summary_max_tokens,
        timeout=config.summary_timeout,
        message_chars=config.message_chars,
        checkpoint_chars=config.checkpoint_chars,
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
    llm: OpenAIChat,
    tags: TagStore,
    compaction: Compaction,
    now: Callable[[], datetime],
) -> PreCompactionFlush | None:
    config = settings.compaction
    if not (config.enabled and config.flush_enabled):
        return None
    flush = MemoryFlush(
        llm,
        tags,
        instructions=TAG_INSTRUCTIONS,
        model=settings.llm.model,
        timeout=settings.llm.timeout,
    )
    trigger = flush_trigger(
        compaction.meter.window,
        threshold=config.threshold,
        reserve_floor=config.reserve_tokens_floor,
        soft=config.soft_threshold_tokens,
    )
    return PreCompactionFlush(flush, compaction.meter, sessions, trigger=trigger, now=now)


def _build_lightrag(settings: Settings, now: Callable[[], datetime]) -> LightRagBackend | None:
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


def _build_tools(
    settings: Settings,
    workspace: Workspace,
    recall: Recall,
    now: Callable[[], datetime],
    *,
    lightrag: LightRagBackend | None,
) -> ToolRegistry:
    """The model's tools: the clock, reading memory files, the structured items, and — when
    recall is on — `memory_search`."""
    index = recall.indexer
    search = MemorySearch(recall.index, default_k=settings.rag.search_k, remote=lightrag)
    return ToolRegistry(
        [
            CurrentTime(now),
            *([search] if settings.rag.enabled else []),
            MemoryGet(workspace.memory_root),
            MemoryAdd(recall.writer, index=index),
            MemoryUpdate(recall.writer, index=index),
            MemoryPromote(recall.writer, index=index),
            MemoryForget(recall.writer, index=index),
        ]
    )


def _instructions(settings: Settings) -> str:
    """How to remember (tags) and, with `memory_search` offered, how to recall (seed 004)."""
    if not settings.rag.enabled:
        return TAG_INSTRUCTIONS
    return f"{TAG_INSTRUCTIONS}\n\n{RECALL_INSTRUCTIONS}"


def _build_pipeline(
    settings: Settings,
    sessions: SessionStore,
    llm: OpenAIChat,
    memory: Memory,
    recall: Recall,
    consolidator: Consolidator,
    compaction: Compaction,
    now: Callable[[], datetime],
    *,
    lightrag: LightRagBackend | None,
    tools: ToolRegistry,
) -> Pipeline:
    tags = TagStore(memory.long_term, memory.working, recall.writer)
    flush = _build_flush(settings, sessions, llm, tags, compaction, now)
    return Pipeline(
        [
            *([BestEffort(flush)] if flush else []),
            BestEffort(
                AutoCompaction(
                    compaction.compactor,
                    compaction.meter,
                    enabled=compaction.enabled,
                    threshold=settings.compaction.threshold,
                    keep=compaction.keep,
                )
            ),
            ContextBuilding(
                persona=settings.persona,
                instructions=_instructions(settings),
                memory=build_memory_prompt(
                    settings, recall, memory.recall, memory.count, remote=lightrag
                ),
                now=now,
            ),
            ToolLoop(
                llm,
                tools,
                max_steps=settings.llm.max_tool_steps,
                now=now,
            ),
            MemoryTags(tags),
            MemoryPersist(
                sessions,
                memory.notes,
                now=now,
                consolidator=consolidator,
                memory_window=settings.memory.memory_window,
                keep_messages=settings.memory.keep_messages,
                meter=compaction.meter,
                recorder=recall.writer,
                usage=recall.retriever,
            ),
            BestEffort(RagIndexing(index=recall.index, items=recall.indexer, remote=lightrag)),
        ]
    )
