"""Reminders wired into the app: the store and zones and the `remind` tool (system 22, in the
pipeline, shows a chat's next items), and — once the router exists — the scheduler service, the
task turns and the two commands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.llm.client import LLM
from bot.pipeline import System
from bot.reminders.commands import ReminderCommands, RemindersCommand, TimezoneCommand
from bot.reminders.scheduler import Scheduler
from bot.reminders.store import ReminderStore
from bot.reminders.tasks import TaskTurns
from bot.reminders.tool import RemindTool
from bot.reminders.zones import Zones
from bot.settings import Settings
from bot.storage.files import Locks
from bot.storage.sessions import SessionStore
from bot.storage.workspace import Workspace
from bot.tools.registry import ToolRegistry
from bot.turn.router import Router


@dataclass
class Reminders:
    """The store and the zones; the scheduler that the `remind` tool wakes, once `attach`
    has built it over the router."""

    store: ReminderStore
    zones: Zones
    scheduler: Scheduler | None = None

    def wake(self) -> None:
        if self.scheduler is not None:
            self.scheduler.wake()


def build_reminders(
    settings: Settings,
    workspace: Workspace,
    locks: Locks,
    now: Callable[[], datetime],
    *,
    tools: ToolRegistry,
) -> Reminders:
    """The store and the zones; the `remind` tool offered in `tools`."""
    store = ReminderStore(workspace, locks)
    zones = Zones(
        workspace.timezones_path, locks, default=settings.timezone, documents=workspace.documents
    )
    reminders = Reminders(store=store, zones=zones)
    tools.add(RemindTool(store, zones, now=now, changed=reminders.wake))
    return reminders


def attach(
    settings: Settings,
    reminders: Reminders,
    router: Router,
    workspace: Workspace,
    now: Callable[[], datetime],
    *,
    sessions: SessionStore,
    context: System,
    llm: LLM,
    tools: ToolRegistry,
) -> Scheduler:
    """Task turns and the commands on the router; the scheduler returned (a service: the last
    started, the first stopped)."""
    store, zones = reminders.store, reminders.zones
    scheduler = Scheduler.from_settings(
        settings.reminders, store, router.inbox, router.outlets, now
    )
    reminders.scheduler = scheduler
    tasks = TaskTurns.from_settings(
        settings,
        workspace,
        store.locks,
        tools,
        context=context,
        llm=llm,
        router=router,
        sessions=sessions,
        now=now,
    )
    router.kinds["task"] = tasks.run
    commands = ReminderCommands(store, zones, router.access, now=now, changed=scheduler.wake)
    router.commands.add(RemindersCommand(commands))
    router.commands.add(TimezoneCommand(commands))
    return scheduler
