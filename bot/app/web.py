"""The memory page wired into the app (`bot.web`): its sign-ins, and its pages over the very
objects the chat commands use — the writer, the receipts' desk, the `memory_search` tool, the
reminders' store and commands, the usage ledger and report, doctor's checks — and `/web` on the
router. A service only when `web.enabled`: its server and pages (aiohttp, Jinja2) are imported
only then, so that no command line pays for them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from bot.app.core import Core
from bot.app.pipeline import Turn
from bot.reminders.commands import ReminderCommands
from bot.settings import Settings
from bot.tools.memory_search import MemorySearch
from bot.turn.router import Router
from bot.web.checks import Checks
from bot.web.command import WebCommand
from bot.web.signin import SignIns

if TYPE_CHECKING:
    from bot.web.server import WebServer
    from bot.web.site import Page


Clock = Callable[[], datetime]
__all__ = ["Checks", "Clock", "build_web"]


def build_web(
    settings: Settings,
    core: Core,
    turn: Turn,
    router: Router,
    now: Callable[[], datetime],
    checks: Checks | None = None,
) -> list[WebServer]:
    """The page's server (none when off), and `/web` on the router either way."""
    config = settings.web
    if not config.enabled:
        router.commands.add(WebCommand(None, str, link_minutes=config.link_minutes))
        return []
    from bot.web.server import WebServer  # only now: see the module's docstring

    # over the workspace's path locks
    signins = SignIns.from_settings(config, core.workspace, core.writer.locks, now)
    server = WebServer.from_settings(config, signins, core.access)
    for page in _pages(settings, core, turn, now, server, checks):
        server.add(page.routes())
    router.commands.add(WebCommand(signins, server.link, link_minutes=config.link_minutes))
    return [server]


def _pages(
    settings: Settings,
    core: Core,
    turn: Turn,
    now: Callable[[], datetime],
    server: WebServer,
    checks: Checks | None,
) -> list[Page]:
    from bot.web.pages import conversations as talk
    from bot.web.pages import health, learned, memory, reminders, search, usage

    site, kept, undo = server.site, turn.reminders, settings.memory.undo_minutes
    workspace, writer, desk, locks = core.workspace, core.writer, core.receipts, core.chat_locks
    tool = turn.tools.get(MemorySearch.spec.name)
    commands = ReminderCommands(kept.store, kept.zones, core.access, now=now, changed=kept.wake)
    spend, report = settings.usage, core.spending.report
    caps = usage.Caps(spend.chat_daily_tokens, spend.background_daily_tokens, spend.owners_exempt)
    return [
        memory.MemoryPage(site, workspace, writer, desk.store, locks, undo_minutes=undo),
        learned.LearnedPage(site, desk),
        search.SearchPage(site, workspace, tool if isinstance(tool, MemorySearch) else None),
        talk.ConversationsPage(site, workspace, core.sessions, writer, locks, undo_minutes=undo),
        reminders.RemindersPage(site, kept.store, commands, now=now),
        usage.UsagePage(site, report.ledger, report, caps, now=now),
        health.HealthPage(site, checks, now=now),
    ]
