"""Chat commands, handled before the pipeline: /start /help /new /reset /status /stop.

Each handler returns the text to send. `COMMANDS` is also what channels register as the menu.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.chats import ChatLocks, RunningTurns
from bot.llm.tokens import TokenCounter
from bot.models import Inbound
from bot.storage.sessions import SessionStore

if TYPE_CHECKING:
    from bot.turns import Replier


@dataclass(frozen=True)
class Command:
    name: str
    args: str


COMMANDS: tuple[tuple[str, str], ...] = (
    ("start", "Say hello"),
    ("help", "What I can do"),
    ("new", "Start a new conversation (memory stays)"),
    ("reset", "Same as /new"),
    ("status", "Messages, tokens and model of this conversation"),
    ("stop", "Stop the answer in progress"),
)

HELP = (
    "I'm Mnemo, an assistant that remembers.\n\n"
    + "\n".join(f"/{name} — {description}" for name, description in COMMANDS)
    + "\n\nAnything else you write goes to the model."
)
GREETING = "Hello! I'm Mnemo. Talk to me; I keep notes so I remember. /help lists commands."


def parse_command(text: str) -> Command | None:
    """`/name@bot args` → Command(name, args); anything else → None."""
    if not text.startswith("/") or len(text) < 2:
        return None
    head, _, args = text.partition(" ")
    name = head[1:].split("@", 1)[0].lower()
    return Command(name=name, args=args.strip()) if name.isidentifier() else None


class Commands:
    def __init__(
        self,
        *,
        sessions: SessionStore,
        locks: ChatLocks,
        running: RunningTurns,
        tokens: TokenCounter,
        model: str,
        pipeline: Sequence[str],
    ) -> None:
        self.sessions = sessions
        self.locks = locks
        self.running = running
        self.tokens = tokens
        self.model = model
        self.pipeline = pipeline
        self._handlers: dict[str, Callable[[Inbound, str], Awaitable[str]]] = {
            "start": self._start,
            "help": self._help,
            "new": self._new,
            "reset": self._new,
            "status": self._status,
            "stop": self._stop,
        }

    async def run(self, command: Command, inbound: Inbound, replier: Replier) -> None:
        handler = self._handlers.get(command.name)
        if handler is None:
            await replier.send(f"Unknown command /{command.name}. /help lists what I understand.")
            return
        await replier.send(await handler(inbound, command.args))

    async def _start(self, inbound: Inbound, args: str) -> str:
        return GREETING

    async def _help(self, inbound: Inbound, args: str) -> str:
        return HELP

    async def _new(self, inbound: Inbound, args: str) -> str:
        async with self.locks.hold(inbound.session_key):
            await self.sessions.archive(inbound.session_key)
        return "Started a new conversation. Your memory files are kept."

    async def _status(self, inbound: Inbound, args: str) -> str:
        session = await self.sessions.load(inbound.session_key)
        estimate = self.tokens.count_messages(session.messages)
        reported = session.last_prompt_tokens
        lines = [
            f"Messages: {len(session.messages)}",
            f"Estimated tokens: ~{estimate:,}",
            f"Last prompt (reported): {reported:,}" if reported else "Last prompt: none yet",
            f"Model: {self.model}",
            f"Pipeline: {', '.join(self.pipeline)}",
        ]
        if self.running.is_running(inbound.session_key):
            lines.append("A reply is in progress (/stop cancels it).")
        return "\n".join(lines)

    async def _stop(self, inbound: Inbound, args: str) -> str:
        if self.running.stop(inbound.session_key):
            return "Stopped."
        return "Nothing to stop."
