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
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from bot.app.channel import Telegram, telegram_channel
from bot.app.core import Core, build_core
from bot.app.media import build_media, build_transcriber
from bot.app.memory import ItemsAndIndex
from bot.app.pipeline import Turn, build_turn
from bot.app.reminders import attach
from bot.app.steering import Spending
from bot.app.turn import build_router
from bot.app.web import Checks, Clock, build_web
from bot.background import Service, WarmUp
from bot.channels.telegram.budget import Pace
from bot.llm.openai_chat import OpenAIChat
from bot.memory.upkeep.archiving import NoteArchive
from bot.memory.upkeep.consolidation import WAIT_GRACE, Consolidator
from bot.memory.upkeep.decay import ItemDecay
from bot.memory.upkeep.left import LeftJobs
from bot.memory.writer import MemoryWriter
from bot.settings import Settings
from bot.storage.heartbeat import Heartbeat
from bot.storage.workspace import Workspace
from bot.turn.intake import IntakeFactory
from bot.turn.preview import PromptPreview
from bot.turn.router import Router


@dataclass(frozen=True)
class App:
    router: Router
    llm: OpenAIChat
    workspace: Workspace
    now: Callable[[], datetime]
    preview: PromptPreview  # the next prompt of a chat, without the model (`bot prompt`)
    services: list[Service]
    items_index: ItemsAndIndex  # the index and structured items (tests, tools)
    intake: IntakeFactory  # how a channel queues what it receives (bot.app.store)
    spending: Spending  # what the model spends; its caps' line to the owners
    pace: Pace | None  # Telegram's send rate shared by the replicas (bot.app.store)
    # the model's SDK, the token counter's encoding: loaded at the start (one process), or once
    # the channel serves (`warm_when`: a replica answers /healthz first)
    warm: WarmUp

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
    """The app over `settings`, in the order a turn meets it: the core (workspace, model,
    memory, journal, gate), the turn (tools, compaction, pipeline), what comes with a message,
    the router, then the services; `now` (tests) replaces its clock; `checks`: doctor's (web)."""
    now = now or clock(settings.timezone)
    core = build_core(settings, api_key, now)
    turn = build_turn(settings, core, now)
    transcriber = build_transcriber(settings, api_key, core.spending.transcribed)
    media = build_media(
        settings, core.workspace, transcriber, core.windows, core.memory.tokens.count
    )
    router = build_router(settings, core, turn, now, media=media)
    once = _once(settings, core, turn, router, now)  # the reminders' commands on the router
    background: list[Service] = [
        *([turn.lightrag] if turn.lightrag else []),
        *([transcriber] if transcriber else []),
    ]
    services: list[Service] = [
        *core.store.services,  # first: the shared database, before anything uses the journal
        core.items_index.index,  # first: opened and synced before anything else, stopped last
        router.door,  # says who owns the bot (or logs the claim code) before the first message
        core.items_index.usage,
        core.consolidator,
        *background,
        *build_web(settings, core, turn, router, now, checks),
        *core.store.once(once),  # the last started, the first stopped
    ]
    one_process = settings.store.url is None  # a replica is ready before it loads them
    return App(
        router=router,
        llm=core.llm,
        workspace=core.workspace,
        now=now,
        preview=turn.preview,
        services=services,
        items_index=core.items_index,
        intake=core.store.intake,
        spending=core.spending,
        pace=core.store.pace,
        warm=WarmUp((core.llm.warm, core.memory.tokens.warm), at_start=one_process),
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
        owner_line=app.spending.line,
        pace=app.pace,
    )


def _once(
    settings: Settings, core: Core, turn: Turn, router: Router, now: Callable[[], datetime]
) -> list[tuple[str, Service]]:
    """The background work that runs once however many replicas run it, by name: the daily
    upkeep, the undo purge, the jobs a replica left, the reminders firing."""
    scheduler = attach(
        turn.reminders,
        router,
        sessions=core.sessions,
        context=turn.context,
        llm=core.spending.llm("task"),  # scheduled tasks (capped by `bot.reminders`)
        tools=turn.tools,
    )
    return [
        *_build_upkeep(settings, core.workspace, core.writer, now),
        ("undo-purge", core.undo),
        *_left_jobs(settings, core.consolidator, now),
        ("reminders", scheduler),
    ]


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
