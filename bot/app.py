"""The composition root: the only place concrete classes are built and wired together."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from bot.access import AccessPolicy
from bot.chats import ChatLocks, RunningTurns
from bot.commands import Commands
from bot.freshness import FreshnessPolicy, SessionRenewal, Summarizer
from bot.llm.meter import PromptMeter
from bot.llm.openai_chat import OpenAIChat
from bot.llm.tokens import TokenCounter
from bot.llm.windows import load_windows
from bot.memory.compaction import Compactor
from bot.memory.consolidation import Consolidator
from bot.memory.edits import MemoryEdits
from bot.memory.flush import MemoryFlush
from bot.memory.history import HistoryLog
from bot.memory.inventory import MemoryInventory
from bot.memory.log_compaction import LogCompaction
from bot.memory.long_term import LongTermMemory
from bot.memory.notes import DailyNotes
from bot.memory.recall import MemoryRecall
from bot.memory.tag_store import TagStore
from bot.memory.tags import TAG_INSTRUCTIONS
from bot.memory.working import WorkingMemory
from bot.pipeline import BestEffort, Pipeline
from bot.settings import Settings
from bot.storage.files import FileLocks
from bot.storage.inbox import Inbox
from bot.storage.jobs import JobStore
from bot.storage.lines import LineReader
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
class Memory:
    """The memory model's parts, built once and shared by the systems and commands."""

    long_term: LongTermMemory
    working: WorkingMemory
    notes: DailyNotes
    recall: MemoryRecall
    history: HistoryLog
    reader: LineReader
    tokens: TokenCounter
    file_locks: FileLocks


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
    memory = _build_memory(settings, workspace, now)
    consolidator = _build_consolidator(settings, workspace, llm, memory, now)
    compaction = _build_compaction(settings, sessions, llm, memory, now)
    pipeline = _build_pipeline(settings, sessions, llm, memory, consolidator, compaction, now)
    locks, running = ChatLocks(), RunningTurns()
    access = AccessPolicy(
        owner_ids=settings.telegram.owner_ids,
        allowed_user_ids=settings.telegram.allowed_user_ids,
    )
    consolidating = settings.memory.memory_window > 0  # 0 turns consolidation off, /new too
    commands = Commands(
        sessions=sessions,
        locks=locks,
        running=running,
        model=settings.llm.model,
        pipeline=pipeline.describe(),
        access=access,
        consolidator=consolidator if consolidating else None,
        working=memory.working,
        inventory=MemoryInventory(
            workspace, memory.reader, memory.recall, memory.history, memory.working, now=now
        ),
        edits=MemoryEdits(workspace, memory.long_term, memory.file_locks),
        compactor=compaction.compactor,
        meter=compaction.meter,
        history=memory.history,
        keep_last_messages=compaction.keep,
    )
    runner = TurnRunner(
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
            settings,
            sessions,
            summarizer=compaction.compactor,
            consolidator=consolidator if consolidating else None,
            working=memory.working,
            now=now,
        ),
    )
    log_compaction = LogCompaction(
        workspace,
        memory.long_term,
        memory.file_locks,
        retention_days=settings.memory.retention_days,
        now=now,
    )
    services: list[Service] = [log_compaction, consolidator]
    return App(runner=runner, llm=llm, workspace=workspace, now=now, services=services)


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


def _build_memory(settings: Settings, workspace: Workspace, now: Callable[[], datetime]) -> Memory:
    file_locks = FileLocks(workspace.locks_dir)
    working = WorkingMemory(
        workspace, file_locks, stale_days=settings.memory.working_memory_stale_days, now=now
    )
    tokens, reader = TokenCounter(), LineReader()
    recall = MemoryRecall(
        workspace,
        reader,
        working,
        tokens.count,
        recent_days=settings.memory.recent_days,
        budget_tokens=settings.memory.prompt_budget_tokens,
    )
    notes = DailyNotes(
        workspace,
        user_chars=settings.memory.note_user_chars,
        assistant_chars=settings.memory.note_assistant_chars,
    )
    return Memory(
        long_term=LongTermMemory(workspace, file_locks),
        working=working,
        notes=notes,
        recall=recall,
        history=HistoryLog(workspace, file_locks),
        reader=reader,
        tokens=tokens,
        file_locks=file_locks,
    )


def _build_consolidator(
    settings: Settings,
    workspace: Workspace,
    llm: OpenAIChat,
    memory: Memory,
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
    )


def _build_renewal(
    settings: Settings,
    sessions: SessionStore,
    *,
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
    persona = memory.tokens.count(settings.persona) + memory.tokens.count(TAG_INSTRUCTIONS)
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
    memory: Memory,
    compaction: Compaction,
    now: Callable[[], datetime],
) -> PreCompactionFlush | None:
    config = settings.compaction
    if not (config.enabled and config.flush_enabled):
        return None
    flush = MemoryFlush(
        llm,
        TagStore(memory.long_term, memory.working),
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


def _build_pipeline(
    settings: Settings,
    sessions: SessionStore,
    llm: OpenAIChat,
    memory: Memory,
    consolidator: Consolidator,
    compaction: Compaction,
    now: Callable[[], datetime],
) -> Pipeline:
    flush = _build_flush(settings, sessions, llm, memory, compaction, now)
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
                instructions=TAG_INSTRUCTIONS,
                recall=memory.recall,
                now=now,
            ),
            ToolLoop(
                llm,
                ToolRegistry([CurrentTime(now)]),
                max_steps=settings.llm.max_tool_steps,
                now=now,
            ),
            MemoryTags(TagStore(memory.long_term, memory.working)),
            MemoryPersist(
                sessions,
                memory.notes,
                now=now,
                consolidator=consolidator,
                memory_window=settings.memory.memory_window,
                keep_messages=settings.memory.keep_messages,
                meter=compaction.meter,
            ),
            BestEffort(RagIndexing()),
        ]
    )
