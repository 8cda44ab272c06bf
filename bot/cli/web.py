"""`python -m bot web link [--user ID]`: a one-time sign-in link to the memory page, for a shell
user — as `/web` gives one in a private chat. It writes the link (hashed) where the running bot
reads it (`state/web.json`, `bot.web.signin`) and prints it; it works once, within
`web.link_minutes`. The link is an owner's: the first owner's (configured or claimed) unless
`--user` names another person the bot lets in; with no owner yet, the console's."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

from bot import shell
from bot.app import clock
from bot.app.store import roster_only
from bot.settings import Settings
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from bot.turn.access import LOCAL_USER_ID, AccessPolicy
from bot.web.server import page_address, sign_in_link
from bot.web.signin import SignIns, Visitor

Print = Callable[[str], None]
OFF = "the memory page is off: set BOT_WEB__ENABLED=true (or web.enabled) and restart the bot"


def run(settings: Settings, args: argparse.Namespace, out: Print = print) -> int:
    if not settings.web.enabled:
        out(f"error: {OFF}")
        return 2
    workspace = Workspace(settings.workspace)
    workspace.ensure()
    visitor = asyncio.run(_visitor(settings, workspace, args.user))
    if visitor is None:
        out(f"error: the bot does not let user {args.user} in ({shell.command('pair list')})")
        return 1
    token = asyncio.run(_link(settings, workspace, visitor))
    config = settings.web
    base = page_address(public_url=config.public_url, host=config.host, port=config.port)
    out(sign_in_link(base, token))
    out(f"(works once, within {config.link_minutes} minutes; signs in as {visitor.chat})")
    return 0


async def _visitor(settings: Settings, workspace: Workspace, user: int | None) -> Visitor | None:
    telegram = settings.telegram
    async with roster_only(settings, workspace) as roster:
        access = AccessPolicy(
            owner_ids=telegram.owner_ids, allowed_user_ids=telegram.allowed_user_ids, roster=roster
        )
        owners = sorted(access.owners())
        allowed = user is not None and access.allows(user)
    if user is None:
        return Visitor(owners[0], f"telegram:{owners[0]}") if owners else _console()
    return Visitor(user, f"telegram:{user}") if allowed else None


def _console() -> Visitor:
    return Visitor(LOCAL_USER_ID, f"console:{LOCAL_USER_ID}")


async def _link(settings: Settings, workspace: Workspace, visitor: Visitor) -> str:
    signins = SignIns(
        workspace.web_path,
        FileLocks(workspace.locks_dir),
        now=clock(settings.timezone),
        link_minutes=settings.web.link_minutes,
        session_hours=settings.web.session_hours,
    )
    return await signins.link(visitor)
