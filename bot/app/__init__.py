"""The composition root: the only place concrete classes are built and wired together.

channel.py    The Telegram channel, as `settings.telegram.mode` says
core.py       The core of the app: the workspace, the model, memory and its one writer, the
              journal and the gate
media.py      Composition of what comes with a message (`bot.media`)
memory.py     The composition root's memory half
pipeline.py   Composition of a turn
reminders.py  Reminders wired into the app
steering.py   The parts a person steers with
store.py      Where the journal, the chats' queue, the path locks and the documents live, picked
              once from `settings.store`
turn.py       Composition of what a message meets
web.py        The memory page wired into the app (`bot.web`)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from bot.app.channel import Telegram, telegram_channel
from bot.app.core import Core, build_core
from bot.app.media import build_media, build_transcriber
from bot.app.memory import ItemsAndIndex
from bot.app.pipeline import (
    TurnPieces,
    build_compaction,
    build_context,
    build_lightrag,
    build_pipeline,
    build_tools,
)
from bot.app.reminders import Reminders, attach, build_reminders
from bot.app.steering import Spending
from bot.app.store import Service
from bot.app.turn import TurnParts, build_router
from bot.app.web import Checks, Clock, WebParts, build_web
from bot.background import WarmUp
from bot.channels.telegram.budget import Pace
from bot.index.lightrag import LightRagBackend
from bot.llm.inspection import LastRequests
from bot.llm.openai_chat import OpenAIChat
from bot.memory.upkeep.archiving import NoteArchive
from bot.memory.upkeep.consolidation import WAIT_GRACE, Consolidator
from bot.memory.upkeep.decay import ItemDecay
from bot.memory.upkeep.left import LeftJobs
from bot.memory.writer import MemoryWriter
from bot.pipeline import Pipeline
from bot.settings import Settings
from bot.storage.heartbeat import Heartbeat
from bot.storage.workspace import Workspace
from bot.tools.registry import ToolRegistry
from bot.turn.intake import IntakeFactory, MemoryIntake
from bot.turn.preview import PromptPreview
from bot.turn.router import Router


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


def build_app(
    settings: Settings, *, api_key: str, now: Clock | None = None, checks: Checks | None = None
) -> App:
    """The app over `settings`; `now` (tests) replaces its clock; `checks`: doctor's (web)."""
    now = now or clock(settings.timezone)
    core = build_core(settings, api_key, now)
    workspace, sessions, memory, writer = core.workspace, core.sessions, core.memory, core.writer
    items_index, store = core.items_index, core.store
    lightrag, tools, reminders = _build_tools(settings, core, now)
    compacting = core.spending.llm("compaction")
    compaction = build_compaction(
        settings, sessions, compacting, memory, writer, now, windows=core.windows, tools=tools.specs
    )
    sent = LastRequests()
    context = build_context(settings, memory, items_index, compaction, now, lightrag=lightrag)
    turn = TurnPieces(context, compaction, tools, sent, lightrag)
    pipeline = reminders.into(build_pipeline(settings, core, turn, now))
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
    settings: Settings, core: Core, now: Callable[[], datetime]
) -> tuple[LightRagBackend | None, ToolRegistry, Reminders]:
    """The LightRAG backend (when on), the model's tools, and the reminders (their `remind`
    tool among the tools)."""
    lightrag = build_lightrag(settings, now)
    tools = build_tools(
        settings, core.workspace, core.items_index, now, writer=core.writer, lightrag=lightrag
    )
    reminders = build_reminders(settings, core.workspace, core.memory.file_locks, now, tools=tools)
    return lightrag, tools, reminders


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


def _turn_parts(
    core: Core, turn: TurnPieces, pipeline: Pipeline, now: Callable[[], datetime]
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
