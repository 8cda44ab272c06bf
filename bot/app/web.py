"""The memory page wired into the app (`bot.web`): its sign-ins, and its pages over the very
objects the chat commands use — the writer, the receipts' desk, the `memory_search` tool, the
reminders' store and commands, the usage ledger and report, doctor's checks — and `/web` on the
router. A service only when `web.enabled`: its server and pages (aiohttp, Jinja2) are imported
only then, so that no command line pays for them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from bot.app.reminders import Reminders
from bot.app.turn import TurnParts
from bot.reminders.commands import ReminderCommands
from bot.settings import Settings
from bot.storage.sessions import SessionStore
from bot.tools.memory_search import MemorySearch
from bot.tools.registry import ToolRegistry
from bot.turn.router import Router
from bot.web.checks import Checks
from bot.web.command import WebCommand
from bot.web.signin import SignIns

if TYPE_CHECKING:
    from bot.web.server import WebServer
    from bot.web.site import Page


Clock = Callable[[], datetime]
__all__ = ["Checks", "Clock", "WebParts", "build_web"]


@dataclass(frozen=True)
class WebParts:
    """What the pages are built on, beside the turn's parts."""

    turn: TurnParts
    sessions: SessionStore
    reminders: Reminders
    tools: ToolRegistry


def build_web(
    settings: Settings,
    parts: WebParts,
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

    workspace = parts.reminders.workspace
    signins = SignIns(
        workspace.web_path,
        parts.turn.writer.locks,  # the workspace's path locks
        now=now,
        link_minutes=config.link_minutes,
        session_hours=config.session_hours,
        documents=workspace.documents,
    )
    access = parts.turn.steering.gate.access
    server = WebServer(
        signins,
        access,
        host=config.host,
        port=config.port,
        public_url=config.public_url,
        session_hours=config.session_hours,
    )
    for page in _pages(settings, parts, now, server, checks):
        server.add(page.routes())
    router.commands.add(WebCommand(signins, server.link, link_minutes=config.link_minutes))
    return [server]


def _pages(
    settings: Settings,
    parts: WebParts,
    now: Callable[[], datetime],
    server: WebServer,
    checks: Checks | None,
) -> list[Page]:
    from bot.web.pages import conversations as talk
    from bot.web.pages import health, learned, memory, reminders, search, usage

    site, turn, kept = server.site, parts.turn, parts.reminders
    workspace, writer, steering = kept.workspace, turn.writer, turn.steering
    undo = settings.memory.undo_minutes
    tool = parts.tools.get(MemorySearch.spec.name)
    commands = ReminderCommands(
        kept.store, kept.zones, steering.gate.access, now=now, changed=kept.wake
    )
    spend = settings.usage
    caps = usage.Caps(spend.chat_daily_tokens, spend.background_daily_tokens, spend.owners_exempt)
    desk, locks = steering.receipts, steering.gate.locks
    return [
        memory.MemoryPage(site, workspace, writer, desk.store, locks, undo_minutes=undo),
        learned.LearnedPage(site, desk),
        search.SearchPage(site, workspace, tool if isinstance(tool, MemorySearch) else None),
        talk.ConversationsPage(site, workspace, parts.sessions, writer, locks, undo_minutes=undo),
        reminders.RemindersPage(site, kept.store, commands, now=now),
        usage.UsagePage(site, steering.usage.ledger, steering.usage, caps, now=now),
        health.HealthPage(site, checks, now=now),
    ]
