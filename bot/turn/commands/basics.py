"""/start, /help and /stop."""

from __future__ import annotations

from dataclasses import dataclass

from bot.models import Inbound
from bot.turn.access import AccessPolicy
from bot.turn.chats import RunningTurns
from bot.turn.commands.handler import COMMANDS, OWNER_COMMANDS, Progress

HELP = (
    "I'm Mnemo, an assistant that remembers.\n\n"
    + "\n".join(f"/{name} — {description}" for name, description in COMMANDS)
    + "\n\nAnything else you write goes to the model."
)
OWNER_HELP = (
    HELP
    + "\n\nFor you as an owner, in this private chat:\n"
    + "\n".join(f"/{name} — {description}" for name, description in OWNER_COMMANDS)
)
GREETING = "Hello! I'm Mnemo. Talk to me; I keep notes so I remember. /help lists commands."


class Start:
    names = ("start",)
    slow = False

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        return GREETING


@dataclass(eq=False)
class Help:
    names = ("help",)
    slow = False

    access: AccessPolicy

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        owner = inbound.is_private and self.access.is_owner(inbound.user_id)
        return OWNER_HELP if owner else HELP


@dataclass(eq=False)
class Stop:
    names = ("stop",)
    slow = False

    running: RunningTurns

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        return "Stopped." if self.running.stop(inbound.session_key) else "Nothing to stop."
