"""The core of the app: the workspace, the model, memory and its one writer, the journal and
the gate, built once for everything else. Part of the composition root (see `bot.app`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.app.memory import ItemsAndIndex, Memory, build_items_and_index, build_memory, build_writer
from bot.app.steering import Gate, Spending, Steering, build_door, build_steering
from bot.app.store import Store, build_store
from bot.errors import StartupError
from bot.llm.client import LLM
from bot.llm.openai_chat import OpenAIChat
from bot.llm.windows import ModelWindows, load_windows
from bot.memory.upkeep.consolidation import Consolidator
from bot.memory.writer import MemoryWriter
from bot.receipts import ReceiptStore
from bot.settings import Settings
from bot.storage.chatter import ChatterStore
from bot.storage.files import Locks
from bot.storage.jobs import JobStore
from bot.storage.sessions import SessionStore
from bot.storage.undo import UndoStore
from bot.storage.workspace import Workspace
from bot.turn.chats import ChatLocks
from bot.turn.notices import ToldNotices

OUTPUT_RESERVE = 4096  # tokens a consolidation request leaves for the answer (a quarter at most)


@dataclass(frozen=True)
class Core:
    """What the turn is built on: the workspace, the model, memory and its one writer."""

    workspace: Workspace
    store: Store  # the journal, the intake and the path locks (bot.app.store)
    sessions: SessionStore
    windows: ModelWindows
    llm: OpenAIChat
    memory: Memory
    items_index: ItemsAndIndex
    undo: UndoStore
    chatter: ChatterStore | None
    writer: MemoryWriter
    consolidator: Consolidator
    steering: Steering  # receipts, /usage, and the gate (access, door, chat locks)
    spending: Spending  # the model client of each kind of work, metered and capped


def build_core(settings: Settings, api_key: str, now: Callable[[], datetime]) -> Core:
    workspace = open_workspace(settings)
    windows = build_windows(settings, workspace)
    llm = build_llm(settings, api_key, windows)
    store = build_store(settings, workspace)
    workspace = Workspace(workspace.root, store.documents)
    memory = build_memory(settings, workspace, now, locks=store.locks)
    items_index = build_items_and_index(
        settings, workspace, memory.file_locks, memory.count, now, api_key=api_key
    )
    undo = UndoStore(
        workspace.undo_dir,
        keep=minutes(settings.memory.undo_minutes),
        now=now,
        documents=workspace.documents,
        root=workspace.root,
    )
    chatter = _build_chatter(settings, workspace, memory.file_locks)
    receipts = ReceiptStore(
        workspace.receipts_path, memory.file_locks, now=now, documents=workspace.documents
    )
    writer = build_writer(workspace, memory, items_index, undo, chatter=chatter, receipts=receipts)
    told = ToldNotices(workspace.door_told_path, store.locks, documents=workspace.documents)
    gate = Gate(*build_door(settings, store.roster, now, told=told), ChatLocks())
    steering, spending = build_steering(settings, workspace, receipts, writer, llm, gate, now)
    consolidating = spending.llm("consolidation")
    consolidator = _build_consolidator(
        settings, workspace, consolidating, writer, memory.tokens.count, now, windows
    )
    return Core(
        workspace=workspace,
        store=store,
        sessions=SessionStore(workspace, now=now, locks=store.locks),
        windows=windows,
        llm=llm,
        memory=memory,
        items_index=items_index,
        undo=undo,
        chatter=chatter,
        writer=writer,
        consolidator=consolidator,
        steering=steering,
        spending=spending,
    )


def open_workspace(settings: Settings) -> Workspace:
    """The workspace, created if need be; a `StartupError` that says how to fix one the bot
    may not write."""
    workspace = Workspace(settings.workspace)
    if (problem := workspace.unwritable()) is not None:
        raise StartupError(problem)
    workspace.ensure()
    return workspace


def minutes(count: int) -> timedelta:
    return timedelta(minutes=count)


def _build_chatter(settings: Settings, workspace: Workspace, locks: Locks) -> ChatterStore | None:
    """Where groups' chatter waits for the bot's next turn there; None when none is kept."""
    telegram = settings.telegram
    if telegram.group_chatter_messages == 0:
        return None
    return ChatterStore(
        workspace,
        locks,
        max_messages=telegram.group_chatter_messages,
        max_chars=telegram.group_chatter_chars,
    )


def build_windows(settings: Settings, workspace: Workspace) -> ModelWindows:
    """The models' windows: the setting, what providers stated (remembered), models.json."""
    window = settings.llm.context_window
    return ModelWindows(
        load_windows(settings.compaction.models_file),
        learned_file=workspace.state_dir / "windows.json",
        override=(settings.llm.model, window) if window else None,
    )


def build_llm(settings: Settings, api_key: str, windows: ModelWindows) -> OpenAIChat:
    """The model client (also `python -m bot doctor`'s, without the rest of the app)."""
    return OpenAIChat(
        base_url=settings.llm.base_url,
        api_key=api_key,
        model=settings.llm.model,
        timeout=settings.llm.timeout,
        first_token_timeout=settings.llm.first_token_timeout,
        max_retries=settings.llm.max_retries,
        temperature=settings.llm.temperature,
        max_tokens=settings.llm.max_output_tokens,
        windows=windows,
        proxy=settings.llm.proxy,
    )


def _build_consolidator(
    settings: Settings,
    workspace: Workspace,
    llm: LLM,
    writer: MemoryWriter,
    count: Callable[[str], int],
    now: Callable[[], datetime],
    windows: ModelWindows,
) -> Consolidator:
    model = settings.llm.fast_model or settings.llm.model
    window = windows.for_model(model)
    return Consolidator(
        llm=llm,
        model=model,
        memory=writer,
        jobs=JobStore(workspace.consolidation_dir, writer.locks, workspace.documents),
        now=now,
        max_memory_size=settings.memory.max_memory_size,
        timeout=settings.memory.consolidation_timeout,
        raw_fallback_messages=settings.memory.raw_fallback_messages,
        raw_fallback_chars=settings.memory.raw_fallback_chars,
        count=count,
        request_tokens=window - min(OUTPUT_RESERVE, window // 4),
    )
