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
from bot.llm.openai_chat import OpenAIChat
from bot.llm.tokens import TokenCounter
from bot.memory.consolidation import Consolidator
from bot.memory.edits import MemoryEdits
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


def build_app(settings: Settings, *, api_key: str) -> App:
    now = clock(settings.timezone)
    workspace = Workspace(settings.workspace)
    workspace.ensure()
    sessions = SessionStore(workspace, now=now)
    llm = _build_llm(settings, api_key)
    memory = _build_memory(settings, workspace, now)
    consolidator = _build_consolidator(settings, workspace, llm, memory, now)
    pipeline = _build_pipeline(settings, sessions, llm, memory, consolidator, now)
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
        tokens=memory.tokens,
        model=settings.llm.model,
        pipeline=pipeline.describe(),
        access=access,
        consolidator=consolidator if consolidating else None,
        working=memory.working,
        inventory=MemoryInventory(
            workspace, memory.reader, memory.recall, memory.history, memory.working, now=now
        ),
        edits=MemoryEdits(workspace, memory.long_term, memory.file_locks),
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


def _build_pipeline(
    settings: Settings,
    sessions: SessionStore,
    llm: OpenAIChat,
    memory: Memory,
    consolidator: Consolidator,
    now: Callable[[], datetime],
) -> Pipeline:
    return Pipeline(
        [
            AutoCompaction(),
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
            ),
            BestEffort(RagIndexing()),
        ]
    )
