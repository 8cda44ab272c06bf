"""`python -m bot pair list | approve CODE | unpair ID`: pairing from a shell, as an owner does it
with /pair and /unpair in their chat (the same words, `bot.turn.door`).

They need the settings and the workspace only (no token, no model key), and may run while the
bot runs: both change the roster (`state/paired.json`, or PostgreSQL's with `BOT_STORE__URL`)
one change at a time, and the bot reads it afresh. A user
approved here is not told by the bot (it hears nothing of it); they just write again. While
the bot has no owner, `list` starts with the claim code (made now if the bot never made one).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

from bot.app import clock
from bot.app.store import roster_only
from bot.settings import Settings
from bot.storage.workspace import Workspace
from bot.turn.door import Door

Print = Callable[[str], None]


def run(settings: Settings, args: argparse.Namespace, out: Print = print) -> int:
    workspace = Workspace(settings.workspace)
    workspace.ensure()
    return asyncio.run(_with_roster(settings, workspace, args, out))


async def _with_roster(
    settings: Settings, workspace: Workspace, args: argparse.Namespace, out: Print
) -> int:
    async with roster_only(settings, workspace) as roster:
        door = Door.from_settings(settings.telegram, roster, clock(settings.timezone))
        return await _run(door, args, out)


async def _run(door: Door, args: argparse.Namespace, out: Print) -> int:
    if args.pair_command == "list":
        await door.start()  # no owner: the claim code, kept from now on
        out(door.listing())
        return 0
    if args.pair_command == "approve":
        reply, welcome = await door.approve(args.code)
        out(reply)
        return 0 if welcome is not None else 1
    reply, done = await door.unpair(args.user_id)
    out(reply)
    return 0 if done else 1
