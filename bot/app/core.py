"""The core of the app, built once for everything else: the workspace, the model and what it
spends, memory and its one writer, the consolidator, and the gate (who may talk, the door for
everyone else, each chat's lock). Part of the composition root (see `bot.app`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.app.store import Store, build_store
from bot.llm.client import LLM
from bot.llm.openai_chat import OpenAIChat
from bot.llm.tokens import TokenCounter
from bot.llm.windows import ModelWindows
from bot.memory.forgetting import Forgetting
from bot.memory.notes.daily import DailyNotes, NoteFormat
from bot.memory.notes.history import HistoryLog
from bot.memory.notes.long_term import LongTermMemory
from bot.memory.notes.working import WorkingMemory
from bot.memory.recall.markdown import MarkdownMemory
from bot.memory.recall.sources import ItemsAndIndex
from bot.memory.upkeep.consolidation import Consolidator
from bot.memory.writer import MemoryWriter
from bot.receipts import ReceiptDesk, ReceiptStore
from bot.settings import Settings
from bot.storage.chatter import ChatterStore
from bot.storage.jobs import JobStore
from bot.storage.sessions import SessionStore
from bot.storage.undo import UndoStore
from bot.storage.workspace import Workspace
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks
from bot.turn.door import Door
from bot.turn.notices import ToldNotices
from bot.usage import Spending

OUTPUT_RESERVE = 4096  # tokens a consolidation request leaves for the answer (a quarter at most)


@dataclass(frozen=True)
class Core:
    """What the turn, the router and the services are built on."""

    workspace: Workspace  # its documents where `store` keeps them
    store: Store  # the journal, the intake and the path locks (bot.app.store)
    sessions: SessionStore
    windows: ModelWindows
    llm: OpenAIChat
    spending: Spending  # the model client of each kind of work, metered and capped
    tokens: TokenCounter
    count: Callable[[str], int]  # `tokens.lines`: the prompt's lines repeat every turn
    markdown: MarkdownMemory  # the prompt's memory files (system 20, /memory)
    items_index: ItemsAndIndex
    undo: UndoStore
    chatter: ChatterStore | None  # groups' chatter waiting for the bot's next turn there
    writer: MemoryWriter
    consolidator: Consolidator
    access: AccessPolicy
    door: Door
    chat_locks: ChatLocks
    receipts: ReceiptDesk


def build_core(settings: Settings, api_key: str, now: Callable[[], datetime]) -> Core:
    opened = Workspace.opened(settings.workspace)
    windows = ModelWindows.from_settings(settings, opened)
    llm = OpenAIChat.from_settings(settings.llm, api_key, windows)
    store = build_store(settings, opened)
    workspace, locks, config = Workspace(opened.root, store.documents), store.locks, settings.memory
    tokens = TokenCounter()
    count = tokens.lines
    items_index = ItemsAndIndex.from_settings(
        settings, workspace, locks, count, now, api_key=api_key
    )
    undo = UndoStore.in_workspace(workspace, minutes=config.undo_minutes, now=now)
    chatter = ChatterStore.from_settings(settings.telegram, workspace, locks)
    kept = ReceiptStore(workspace.receipts_path, locks, now=now, documents=workspace.documents)
    writer = _build_writer(settings, workspace, store, items_index, undo, chatter, kept, now)
    told = ToldNotices(workspace.door_told_path, locks, documents=workspace.documents)
    door = Door.from_settings(settings.telegram, store.roster, now, told=told)
    access, chat_locks = door.access, ChatLocks()
    receipts = ReceiptDesk.from_settings(config, kept, writer, owners=access, locks=chat_locks)
    spending = Spending.from_settings(settings.usage, workspace, locks, llm, access, now=now)
    return Core(
        workspace=workspace,
        store=store,
        sessions=SessionStore(workspace, now=now, locks=locks),
        windows=windows,
        llm=llm,
        spending=spending,
        tokens=tokens,
        count=count,
        markdown=MarkdownMemory.from_settings(config, workspace, writer.working, count),
        items_index=items_index,
        undo=undo,
        chatter=chatter,
        writer=writer,
        consolidator=_build_consolidator(
            settings, workspace, spending.llm("consolidation"), writer, tokens.count, now, windows
        ),
        access=access,
        door=door,
        chat_locks=chat_locks,
        receipts=receipts,
    )


def _build_writer(
    settings: Settings,
    workspace: Workspace,
    store: Store,
    items_index: ItemsAndIndex,
    undo: UndoStore,
    chatter: ChatterStore | None,
    receipts: ReceiptStore,
    now: Callable[[], datetime],
) -> MemoryWriter:
    """The one writer over the memory files, the items and the index, and what /forget
    reaches (`chatter`; `receipts`, their copies of what was stored)."""
    config, locks = settings.memory, store.locks
    stale = config.working_memory_stale_days
    return MemoryWriter(
        workspace,
        locks,
        long_term=LongTermMemory(workspace, locks),
        history=HistoryLog(workspace, locks),
        notes=DailyNotes(workspace, NoteFormat.from_settings(config)),
        working=WorkingMemory(workspace, locks, stale_days=stale, now=now),
        items=items_index.item_keeper,
        usage=items_index.retriever,
        index=items_index.index,
        forgetting=Forgetting(workspace, locks, undo, chatter, receipts),
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
    config = settings.memory
    return Consolidator(
        llm=llm,
        model=model,
        memory=writer,
        jobs=JobStore(workspace.consolidation_dir, writer.locks, workspace.documents),
        now=now,
        max_memory_size=config.max_memory_size,
        timeout=config.consolidation_timeout,
        raw_fallback_messages=config.raw_fallback_messages,
        raw_fallback_chars=config.raw_fallback_chars,
        count=count,
        request_tokens=window - min(OUTPUT_RESERVE, window // 4),
    )
