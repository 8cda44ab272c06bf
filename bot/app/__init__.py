"""The composition root: the only place the app's objects are wired together. Each package
builds its own objects from `Settings` (`X.from_settings(settings, collaborators…)`); the root
picks the collaborators and passes them on.

Read top to bottom, `build_app` builds the core (store.py, core.py), the turn's pieces
(pipeline.py, reminders.py), what comes with a message (`MediaReader`), the router with the
pipeline it runs (turn.py), then the services (web.py); `build_telegram` puts the channel in
front (channel.py).

channel.py    The Telegram channel, as `settings.telegram.mode` says
core.py       The workspace, the model and its spending, memory and its one writer, the gate
pipeline.py   A turn: its tools, compaction, the prompt, the ordered systems
reminders.py  Reminders wired into the app
store.py      Where the journal, the chats' queue, the path locks and the documents live, picked
              once from `settings.store`
turn.py       What a message meets: the commands, the turn runner, the router
web.py        The memory page wired into the app (`bot.web`)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.app.channel import Telegram, webhook_hook
from bot.app.core import Core, build_core
from bot.app.pipeline import Turn, build_turn
from bot.app.reminders import attach
from bot.app.turn import build_router
from bot.app.web import Checks, Clock, build_web
from bot.background import Service, WarmUp
from bot.channels.telegram import TelegramChannel
from bot.channels.telegram.budget import Pace
from bot.llm.openai_chat import OpenAIChat
from bot.llm.transcription import OpenAITranscriber
from bot.media.reader import MediaReader
from bot.memory.recall.sources import ItemsAndIndex
from bot.memory.upkeep.archiving import NoteArchive
from bot.memory.upkeep.decay import ItemDecay
from bot.memory.upkeep.left import LeftJobs
from bot.settings import Settings
from bot.storage.heartbeat import Heartbeat
from bot.storage.workspace import Workspace
from bot.turn.intake import IntakeFactory
from bot.turn.preview import PromptPreview
from bot.turn.router import Router
from bot.usage import Spending


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
    memory, journal, gate), the turn's pieces (tools, compaction, the prompt), what comes with a
    message, the router with the pipeline, then the services; `now` (tests) replaces its
    clock; `checks`: doctor's (web)."""
    now = now or clock(settings.timezone)
    core = build_core(settings, api_key, now)
    turn = build_turn(settings, core, now)
    transcriber = OpenAITranscriber.from_settings(settings, api_key, core.spending.transcribed)
    media = MediaReader.from_settings(
        settings, core.workspace, transcriber, core.windows, core.tokens.count
    )
    router = build_router(settings, core, turn, now, media=media)
    once = _once(settings, core, turn, router, now)  # the reminders' commands on the router
    services: list[Service] = [
        *core.store.services,  # first: the shared database, before anything uses the journal
        core.items_index.index,  # first: opened and synced before anything else, stopped last
        router.door,  # says who owns the bot (or logs the claim code) before the first message
        core.items_index.usage,
        core.consolidator,
        *([turn.lightrag] if turn.lightrag else []),
        *([transcriber] if transcriber else []),
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
        warm=WarmUp((core.llm.warm, core.tokens.warm), at_start=one_process),
    )


def build_telegram(
    app: App, settings: Settings, *, token: str, heartbeat: Heartbeat | None = None
) -> Telegram:
    """The Telegram channel over the app's router, as `settings.telegram` says."""
    telegram = settings.telegram
    channel = TelegramChannel.from_settings(
        telegram,
        app.router,
        app.intake,
        token=token,
        heartbeat=heartbeat,
        owner_line=app.spending.line,  # caps on spending tell the owners through it
        pace=app.pace,
    )
    return Telegram(
        channel=channel, settings=telegram, workspace=app.workspace, hook=webhook_hook(telegram)
    )


def _once(
    settings: Settings, core: Core, turn: Turn, router: Router, now: Callable[[], datetime]
) -> list[tuple[str, Service]]:
    """The background work that runs once however many replicas run it, by name: the daily
    upkeep of memory (item decay when on, archiving old notes), the undo purge, the jobs a
    replica left (with replicas), the reminders firing."""
    config, writer, workspace = settings.memory, core.writer, core.workspace
    decaying = config.items.decay_enabled
    left = LeftJobs.from_settings(config, core.consolidator, now)  # with replicas only
    scheduler = attach(
        settings,
        turn.reminders,
        router,
        workspace,
        now,
        sessions=core.sessions,
        context=turn.context,
        llm=core.spending.llm("task"),  # scheduled tasks (capped by `bot.reminders`)
        tools=turn.tools,
    )
    return [
        *([("item-decay", ItemDecay(writer, workspace))] if decaying else []),
        (
            "note-archive",
            NoteArchive(writer, workspace, retention_days=config.retention_days, now=now),
        ),
        ("undo-purge", core.undo),
        *([("consolidation-left", left)] if settings.store.url is not None else []),
        ("reminders", scheduler),
    ]
