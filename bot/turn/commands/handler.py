"""What a command is: the parsed `Command`, the `Handler` that answers it (python-telegram-bot's
`CommandHandler` is the model: the names it answers, and one method), its `Reply`, and the menu
(`COMMANDS`) channels register."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.models import Document, Inbound


@dataclass(frozen=True)
class Command:
    name: str
    args: str


@dataclass(frozen=True)
class Reply:
    """A command's answer: its text, and a file sent before it (or none)."""

    text: str
    document: Document | None = None


class Progress(Protocol):
    """What a slow command tells the chat it is doing (`bot.turn.progress.ProgressNotice`)."""

    def doing(self, text: str) -> None: ...


class Quiet:
    """A `Progress` nobody hears (a slow command answered at once)."""

    def doing(self, text: str) -> None:
        pass


class Handler(Protocol):
    """Answers the commands `names`; a `slow` one may take seconds (a model call, a sweep of
    every file): the chat sees typing from its start and `Progress` says what it is doing."""

    @property
    def names(self) -> tuple[str, ...]: ...

    @property
    def slow(self) -> bool: ...

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str | Reply: ...


COMMANDS: tuple[tuple[str, str], ...] = (
    ("start", "Say hello"),
    ("help", "What I can do"),
    ("new", "Start a new conversation (memory stays)"),
    ("reset", "Same as /new"),
    ("compact", "Summarise older messages to make room (/compact N keeps the last N)"),
    ("status", "Messages, context used and model (/status verbose: more)"),
    ("stop", "Stop the answer in progress"),
    ("memory", "What I remember about this chat"),
    ("remember", "Save a fact to this chat's memory"),
    ("forget", "Forget a text everywhere I keep it (/undo puts it back)"),
    ("undo", "Put back what the last /forget removed (for a few minutes)"),
    ("context", "The last prompt's parts and tokens (owners; /context full sends it as a file)"),
    ("usage", "Tokens and model calls today and this month (owners, in private: every chat)"),
    ("keep", "Keep quoted material as memory: /keep lists it, /keep ID keeps one (owners)"),
    ("reminders", "Your reminders and their next time (/reminders cancel ID, move ID WHEN)"),
    ("timezone", "The time zone your times are read in (/timezone Europe/Lisbon sets it)"),
    ("web", "A one-time link to your memory in a browser (in our private chat)"),
)
OWNER_COMMANDS: tuple[tuple[str, str], ...] = (  # in private; `bot.turn.door` answers them
    ("pair", "Let in whoever got a code: /pair CODE; alone, requests and who is paired"),
    ("unpair", "Shut a paired user out again: /unpair ID"),
)


def parse_command(text: str) -> Command | None:
    """`/name@bot args` → Command(name, args); anything else → None."""
    if not text.startswith("/") or len(text) < 2:
        return None
    head, _, args = text.partition(" ")
    name = head[1:].split("@", 1)[0].lower()
    return Command(name=name, args=args.strip()) if name.isidentifier() else None


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
