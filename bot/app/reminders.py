"""Reminders wired into the app: the store and zones, the `remind` tool, system 22, and — once
the router exists — the scheduler service, the task turns and the two commands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.llm.client import LLM
from bot.pipeline import Pipeline, System
from bot.reminders.commands import ReminderCommands, RemindersCommand, TimezoneCommand
from bot.reminders.prompt import ScheduledInPrompt
from bot.reminders.scheduler import Scheduler
from bot.reminders.store import ReminderStore
from bot.reminders.tasks import Caps, DailySpend, NothingToReport, TaskTurns
from bot.reminders.tool import NAME, RemindTool
from bot.reminders.zones import Zones
from bot.settings import Settings
from bot.storage.files import Locks
from bot.storage.sessions import SessionStore
from bot.storage.workspace import Workspace
from bot.tools.registry import ToolRegistry
from bot.turn.router import Router


@dataclass
class Reminders:
    store: ReminderStore
    zones: Zones
    settings: Settings
    workspace: Workspace
    now: Callable[[], datetime]
    scheduler: Scheduler | None = None

    def wake(self) -> None:
        if self.scheduler is not None:
            self.scheduler.wake()

    def into(self, pipeline: Pipeline) -> Pipeline:
        """The pipeline with system 22 put in (the chat's next items in the prompt)."""
        shown = self.settings.reminders.shown_in_prompt
        return Pipeline([*pipeline.systems, ScheduledInPrompt(self.store, shown=shown)])


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
    reminders = Reminders(store, zones, settings, workspace, now)
    tools.add(RemindTool(store, zones, now=now, changed=reminders.wake))
    return reminders


def attach(
    reminders: Reminders,
    router: Router,
    *,
    sessions: SessionStore,
    context: System,
    llm: LLM,
    tools: ToolRegistry,
) -> Scheduler:
    """Task turns and the commands on the router; the scheduler returned (a service: the last
    started, the first stopped)."""
    config, now = reminders.settings.reminders, reminders.now
    scheduler = Scheduler(
        reminders.store,
        router.inbox,
        router.outlets,
        now=now,
        poll=config.poll_seconds,
        late_after=timedelta(minutes=config.late_minutes),
    )
    reminders.scheduler = scheduler
    task_tools = tools.without(NAME)
    task_tools.add(NothingToReport())
    tasks = TaskTurns(
        context=context,
        llm=llm,
        tools=task_tools,
        router=router,
        sessions=sessions,
        caps=Caps(per_task=config.task_tokens, per_day=config.daily_task_tokens),
        spend=DailySpend(
            reminders.workspace.task_tokens_path,
            now,
            reminders.store.locks,
            reminders.workspace.documents,
        ),
        now=now,
        max_steps=reminders.settings.llm.max_tool_steps,
    )
    router.kinds["task"] = tasks.run
    commands = ReminderCommands(
        reminders.store, reminders.zones, router.access, now=now, changed=scheduler.wake
    )
    router.commands.add(RemindersCommand(commands))
    router.commands.add(TimezoneCommand(commands))
    return scheduler
