"""The composition root: the only place concrete classes are built and wired together."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from bot.app.channel import Telegram, telegram_channel
from bot.app.media import build_media, build_transcriber
from bot.app.memory import ItemsAndIndex, Memory, build_items_and_index, build_memory, build_writer
from bot.app.pipeline import (
    Compaction,
    build_compaction,
    build_context,
    build_lightrag,
    build_pipeline,
    build_tools,
)
from bot.app.reminders import Reminders, attach, build_reminders
from bot.app.steering import Gate, Spending, Steering, build_steering
from bot.app.store import Service, Store, build_store
from bot.app.turn import TurnParts, build_door, build_router
from bot.app.web import Checks, Clock, WebParts, build_web
from bot.background import WarmUp
from bot.channels.telegram.budget import Pace
from bot.errors import StartupError
from bot.index.lightrag import LightRagBackend
from bot.llm.client import LLM
from bot.llm.inspection import LastRequests
from bot.llm.openai_chat import OpenAIChat
from bot.llm.windows import ModelWindows, load_windows
from bot.memory.upkeep.archiving import NoteArchive
from bot.memory.upkeep.consolidation import WAIT_GRACE, Consolidator
from bot.memory.upkeep.decay import ItemDecay
from bot.memory.upkeep.left import LeftJobs
from bot.memory.writer import MemoryWriter
from bot.pipeline import Pipeline
from bot.receipts import ReceiptStore
from bot.settings import Settings
from bot.storage.chatter import ChatterStore
from bot.storage.files import Locks
from bot.storage.heartbeat import Heartbeat
from bot.storage.jobs import JobStore
from bot.storage.sessions import SessionStore
from bot.storage.undo import UndoStore
from bot.storage.workspace import Workspace
from bot.systems.context import ContextBuilding
from bot.tools.registry import ToolRegistry
from bot.turn.chats import ChatLocks
from bot.turn.intake import IntakeFactory, MemoryIntake
from bot.turn.notices import ToldNotices
from bot.turn.preview import PromptPreview
from bot.turn.router import Router

OUTPUT_RESERVE = 4096  # tokens a consolidation request leaves for the answer (a quarter at most)


@dataclass
class App:
    router: Router
    llm: OpenAIChat
    workspace: Workspace
    now: Callable[[], datetime]
    preview: PromptPreview  # the next prompt of a chat, without the model (`bot prompt`)
    services: list[Service] = field(default_factory=list)
    items_index: ItemsAndIndex | None = None  # the index and structured items (tests, tools)
    intake: IntakeFactory = MemoryIntake  # how a channel queues what it receives (bot.app.store)
    spending: Spending | None = None  # what the model spends; its caps' line to the owners
    pace: Pace | None = None  # Telegram's send rate shared by the replicas (bot.app.store)
    # the model's SDK, the token counter's encoding: loaded at the start (one process), or once
    # the channel serves (`warm_when`: a replica answers /healthz first)
    warm: WarmUp = field(default_factory=WarmUp)

    async def start(self) -> None:
        for service in self.services:
            await service.start()
        await self.warm.start()

    def warm_when(self, serving: asyncio.Event) -> None:
        self.warm.after(serving)

    async def aclose(self) -> None:
        await self.warm.stop()
        for service in reversed(self.services):
            await service.stop()
        await self.llm.close()
        await asyncio.to_thread(self.router.inbox.close)


def clock(timezone: str) -> Callable[[], datetime]:
    zone = ZoneInfo(timezone)
    return lambda: datetime.now(zone)


@dataclass(frozen=True)
class _Core:
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


def build_app(
    settings: Settings, *, api_key: str, now: Clock | None = None, checks: Checks | None = None
) -> App:
    """The app over `settings`; `now` (tests) replaces its clock; `checks`: doctor's (web)."""
    now = now or clock(settings.timezone)
    core = _build_core(settings, api_key, now)
    workspace, sessions, memory, writer = core.workspace, core.sessions, core.memory, core.writer
    items_index, store = core.items_index, core.store
    lightrag, tools, reminders = _build_tools(settings, core, now)
    compacting = core.spending.llm("compaction")
    compaction = build_compaction(
        settings, sessions, compacting, memory, writer, now, windows=core.windows, tools=tools.specs
    )
    sent = LastRequests()
    context = build_context(settings, memory, items_index, compaction, now, lightrag=lightrag)
    turn = _TurnPieces(context, compaction, tools, sent, lightrag)
    pipeline = reminders.into(_build_pipeline(settings, core, turn, now))
    transcriber = build_transcriber(settings, api_key, core.spending.transcribed)
    parts = _turn_parts(core, turn, pipeline, now)
    media = build_media(settings, workspace, transcriber, core.windows, memory.tokens.count)
    router = build_router(
        settings, workspace, sessions, parts, now, media=media, chatter=core.chatter
    )
    task = core.spending.llm("task")  # scheduled tasks (capped by `bot.reminders`)
    scheduler = attach(reminders, router, sessions=sessions, context=context, llm=task, tools=tools)
    once = [*_build_upkeep(settings, workspace, writer, now), ("undo-purge", core.undo)]
    once += _left_jobs(settings, core.consolidator, now)
    services: list[Service] = [
        *store.services,  # first: the shared database, before anything uses the journal
        items_index.index,  # first: opened and synced before anything else starts, stopped last
        router.door,  # says who owns the bot (or logs the claim code) before the first message
        items_index.usage,
        core.consolidator,
        *([lightrag] if lightrag else []),
        *([transcriber] if transcriber else []),
        *build_web(settings, WebParts(parts, sessions, reminders, tools), router, now, checks),
        *store.once([*once, ("reminders", scheduler)]),  # the last started, the first stopped
    ]
    app = App(router, core.llm, workspace, now, parts.preview, services, items_index, store.intake)
    one_process = settings.store.url is None  # a replica is ready before it loads them
    warm = WarmUp((core.llm.warm, memory.tokens.warm), at_start=one_process)
    return replace(app, spending=core.spending, pace=store.pace, warm=warm)


def _build_tools(
    settings: Settings, core: _Core, now: Callable[[], datetime]
) -> tuple[LightRagBackend | None, ToolRegistry, Reminders]:
    """The LightRAG backend (when on), the model's tools, and the reminders (their `remind`
    tool among the tools)."""
    lightrag = build_lightrag(settings, now)
    tools = build_tools(
        settings, core.workspace, core.items_index, now, writer=core.writer, lightrag=lightrag
    )
    reminders = build_reminders(settings, core.workspace, core.memory.file_locks, now, tools=tools)
    return lightrag, tools, reminders


@dataclass(frozen=True)
class _TurnPieces:
    """What the pipeline is made of beside the core."""

    context: ContextBuilding
    compaction: Compaction
    tools: ToolRegistry
    sent: LastRequests
    lightrag: LightRagBackend | None


def _build_pipeline(
    settings: Settings, core: _Core, turn: _TurnPieces, now: Callable[[], datetime]
) -> Pipeline:
    """The turn's systems, answering with the model metered as replies."""
    return build_pipeline(
        settings,
        core.sessions,
        core.spending.llm("reply"),
        turn.context,
        core.items_index,
        core.consolidator,
        turn.compaction,
        now,
        workspace=core.workspace,
        writer=core.writer,
        lightrag=turn.lightrag,
        tools=turn.tools,
        sent=turn.sent,
        receipts=core.steering.receipts,
    )


def _build_core(settings: Settings, api_key: str, now: Callable[[], datetime]) -> _Core:
    workspace = _open_workspace(settings)
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
    return _Core(
        workspace=workspace,
        store=store,
        sessions=SessionStore(workspace, now=now),
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


def build_telegram(
    app: App, settings: Settings, *, token: str, heartbeat: Heartbeat | None = None
) -> Telegram:
    """The Telegram channel over the app's router, as `settings.telegram` says."""
    return telegram_channel(
        settings.telegram,
        app.router,
        app.workspace,
        app.intake,
        token=token,
        heartbeat=heartbeat,
        owner_line=app.spending.line if app.spending else None,
        pace=app.pace,
    )


def _open_workspace(settings: Settings) -> Workspace:
    """The workspace, created if need be; a `StartupError` that says how to fix one the bot
    may not write."""
    workspace = Workspace(settings.workspace)
    if (problem := workspace.unwritable()) is not None:
        raise StartupError(problem)
    workspace.ensure()
    return workspace


def _turn_parts(
    core: _Core, turn: _TurnPieces, pipeline: Pipeline, now: Callable[[], datetime]
) -> TurnParts:
    """What the router is built on: the core's memory and journal, the pipeline and its
    accounting, and the preview of a chat's next prompt (how full it is: /status, /compact)."""
    access, compaction = core.steering.gate.access, turn.compaction
    preview = PromptPreview(  # `python -m bot prompt`: system 20, as a turn would run it
        context=turn.context,
        sessions=core.sessions,
        access=access,
        tools=turn.tools.specs,
        meter=compaction.meter,
        now=now,
    )
    return TurnParts(
        core.memory,
        core.writer,
        core.consolidator,
        compaction,
        pipeline,
        turn.sent,
        core.store.journal,
        core.steering,
        preview,
        queue=core.store.queue,
    )


def minutes(count: int) -> timedelta:
    return timedelta(minutes=count)


def _build_upkeep(
    settings: Settings, workspace: Workspace, writer: MemoryWriter, now: Callable[[], datetime]
) -> list[tuple[str, Service]]:
    """The daily upkeep of memory, by name: item decay (when on) and archiving old notes."""
    archive = NoteArchive(writer, workspace, retention_days=settings.memory.retention_days, now=now)
    decaying = settings.memory.items.decay_enabled
    return [
        *([("item-decay", ItemDecay(writer, workspace))] if decaying else []),
        ("note-archive", archive),
    ]


def _left_jobs(
    settings: Settings, consolidator: Consolidator, now: Callable[[], datetime]
) -> list[tuple[str, Service]]:
    """With replicas, the consolidation jobs a replica left behind, run by another (by name)."""
    if settings.store.url is None:
        return []
    after = timedelta(seconds=settings.memory.consolidation_timeout + WAIT_GRACE)
    return [("consolidation-left", LeftJobs(consolidator, after=after, now=now))]


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
