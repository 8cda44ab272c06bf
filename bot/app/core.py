"""The core of the app, built once for everything else: the workspace, the model and what it
spends, memory and its one writer, the consolidator, and the gate (who may talk, the door for
everyone else, each chat's lock). Part of the composition root (see `bot.app`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.app.memory import ItemsAndIndex, build_items_and_index
from bot.app.store import Store, build_store
from bot.errors import StartupError
from bot.llm.client import LLM
from bot.llm.openai_chat import OpenAIChat
from bot.llm.tokens import TokenCounter
from bot.llm.windows import ModelWindows, load_windows
from bot.memory.forgetting import Forgetting
from bot.memory.notes.daily import DailyNotes, NoteFormat
from bot.memory.notes.history import HistoryLog
from bot.memory.notes.long_term import LongTermMemory
from bot.memory.notes.working import WorkingMemory
from bot.memory.recall.markdown import MarkdownMemory
from bot.memory.upkeep.consolidation import Consolidator
from bot.memory.writer import MemoryWriter
from bot.models import parse_session_key
from bot.receipts import ReceiptDesk, ReceiptStore
from bot.settings import Settings
from bot.storage.chatter import ChatterStore
from bot.storage.jobs import JobStore
from bot.storage.lines import LineReader
from bot.storage.roster import RosterStore
from bot.storage.sessions import SessionStore
from bot.storage.undo import UndoStore
from bot.storage.workspace import Workspace
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks
from bot.turn.door import Door
from bot.turn.notices import ToldNotices
from bot.turn.pairing import PLACEHOLDER_OWNER, Pairing, real_owners
from bot.usage import Prices, Spending, UsageLedger
from bot.usage.metered import Limits

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
    opened = open_workspace(settings)
    windows = build_windows(settings, opened)
    llm = build_llm(settings, api_key, windows)
    store = build_store(settings, opened)
    workspace, locks, config = Workspace(opened.root, store.documents), store.locks, settings.memory
    tokens = TokenCounter()
    count = tokens.lines
    items_index = build_items_and_index(settings, workspace, locks, count, now, api_key=api_key)
    keep = timedelta(minutes=config.undo_minutes)
    undo = UndoStore(
        workspace.undo_dir, keep=keep, now=now, documents=workspace.documents, root=workspace.root
    )
    chatter = _build_chatter(settings, workspace, store)
    kept = ReceiptStore(workspace.receipts_path, locks, now=now, documents=workspace.documents)
    writer = _build_writer(settings, workspace, store, items_index, undo, chatter, kept, now)
    told = ToldNotices(workspace.door_told_path, locks, documents=workspace.documents)
    access, door = build_door(settings, store.roster, now, told=told)
    chat_locks = ChatLocks()
    receipts = ReceiptDesk(
        kept,
        writer,
        owners=access,
        locks=chat_locks,
        undo_minutes=config.undo_minutes,
        enabled=config.receipts,  # off: none issued, and old receipts still work
    )
    spending = _build_spending(settings, workspace, store, llm, access, now)
    return Core(
        workspace=workspace,
        store=store,
        sessions=SessionStore(workspace, now=now, locks=locks),
        windows=windows,
        llm=llm,
        spending=spending,
        tokens=tokens,
        count=count,
        markdown=_markdown(settings, workspace, writer, count),
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


def _markdown(
    settings: Settings, workspace: Workspace, writer: MemoryWriter, count: Callable[[str], int]
) -> MarkdownMemory:
    config = settings.memory
    return MarkdownMemory(
        workspace,
        LineReader(memory_root=workspace.memory_root, documents=workspace.documents),
        writer.working,
        count,
        recent_days=config.recent_days,
        budget_tokens=config.prompt_budget_tokens,
        working_lines=config.items.working_top_k,
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
        notes=DailyNotes(
            workspace, NoteFormat(config.note_user_chars, config.note_assistant_chars)
        ),
        working=WorkingMemory(workspace, locks, stale_days=stale, now=now),
        items=items_index.item_keeper,
        usage=items_index.retriever,
        index=items_index.index,
        forgetting=Forgetting(workspace, locks, undo, chatter, receipts),
    )


def open_workspace(settings: Settings) -> Workspace:
    """The workspace, created if need be; a `StartupError` that says how to fix one the bot
    may not write."""
    workspace = Workspace(settings.workspace)
    if (problem := workspace.unwritable()) is not None:
        raise StartupError(problem)
    workspace.ensure()
    return workspace


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
    config = settings.llm
    return OpenAIChat(
        base_url=config.base_url,
        api_key=api_key,
        model=config.model,
        timeout=config.timeout,
        first_token_timeout=config.first_token_timeout,
        max_retries=config.max_retries,
        temperature=config.temperature,
        max_tokens=config.max_output_tokens,
        windows=windows,
        proxy=config.proxy,
    )


def build_door(
    settings: Settings,
    roster: RosterStore,
    now: Callable[[], datetime],
    *,
    told: ToldNotices | None = None,
) -> tuple[AccessPolicy, Door]:
    """Who may talk (the settings and the roster), and the door for everyone else."""
    telegram = settings.telegram
    access = AccessPolicy(
        owner_ids=real_owners(telegram.owner_ids),
        allowed_user_ids=telegram.allowed_user_ids,
        roster=roster,
    )
    door = Door(
        access,
        Pairing(roster, now=now),
        now=now,
        enabled=telegram.pairing,
        placeholder=PLACEHOLDER_OWNER in telegram.owner_ids,
        told=told,
    )
    return access, door


def _build_chatter(settings: Settings, workspace: Workspace, store: Store) -> ChatterStore | None:
    """None when no chatter is kept (`telegram.group_chatter_messages` 0)."""
    telegram = settings.telegram
    if telegram.group_chatter_messages == 0:
        return None
    return ChatterStore(
        workspace,
        store.locks,
        max_messages=telegram.group_chatter_messages,
        max_chars=telegram.group_chatter_chars,
    )


def _build_spending(
    settings: Settings,
    workspace: Workspace,
    store: Store,
    llm: LLM,
    access: AccessPolicy,
    now: Callable[[], datetime],
) -> Spending:
    config = settings.usage
    limits = Limits(
        chat_daily_tokens=config.chat_daily_tokens,
        background_daily_tokens=config.background_daily_tokens,
        owners_exempt=config.owners_exempt,
        warn_share=config.warn_share,
    )

    def owner_chat(chat: str) -> bool:  # an owner's private chat (its id is the owner's)
        parsed = parse_session_key(chat)
        return parsed is not None and parsed[2] is None and access.is_owner(parsed[1])

    return Spending.over(
        llm,
        UsageLedger(workspace.usage_path, store.locks, now=now, documents=workspace.documents),
        limits,
        Prices.load(config.prices_file),
        owners=access.owners,
        owner_chat=owner_chat,
        now=now,
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
