"""Chat commands, handled before the pipeline: /start /help /new /reset /compact /status
(worded by `bot.turn.status`) /stop, and /memory /remember /forget (which act only on the
memory this chat may see), and /context (owners only: the last prompt's parts and tokens,
`bot.llm.inspection`).

Each handler returns the text to send, or a `Reply` that sends a file before it. `COMMANDS` is
also what channels register as the menu.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.conversation.compaction import CompactionResult, Compactor
from bot.errors import NotTextError
from bot.llm.inspection import LastRequests, breakdown, full_text, summary
from bot.llm.meter import PromptMeter
from bot.memory.forgetting import (
    FORGET_MIN_CHARS,
    Forgotten,
    Undone,
    forget_receipt,
    undo_receipt,
)
from bot.memory.notes.history import HistoryLog
from bot.memory.recall.inventory import MemoryInventory
from bot.memory.trust import said_by
from bot.memory.upkeep.consolidation import ConsolidationQueue
from bot.models import Document, Inbound, MemoryScope, Provenance
from bot.storage.jobs import new_job
from bot.storage.sessions import SessionStore
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks, RunningTurns
from bot.turn.keep import QuoteKeeper, keep
from bot.turn.status import Status, wants_verbose
from bot.turn.status import render as render_status


@dataclass(frozen=True)
class Command:
    name: str
    args: str


@dataclass(frozen=True)
class Reply:
    """A command's answer: its text, and a file sent before it (or none)."""

    text: str
    document: Document | None = None


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
    ("keep", "Keep quoted material as memory: /keep lists it, /keep ID keeps one (owners)"),
)
OWNER_COMMANDS: tuple[tuple[str, str], ...] = (  # in private; `bot.turn.door` answers them
    ("pair", "Let in whoever got a code: /pair CODE; alone, requests and who is paired"),
    ("unpair", "Shut a paired user out again: /unpair ID"),
)

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
NEW_EMPTY = "Started a new conversation. Your memory files are kept."
NEW_SAVING = "Saving this conversation ({messages}) to memory, then starting a new one…"
NEW_SAVED = (
    "Started a new conversation. I saved what mattered from the last one ({messages}) to memory."
)
NEW_RAW = (
    "Started a new conversation. The model could not summarise the last one ({messages}), so I "
    "kept it in history as a raw note."
)
COMPACTING = "Summarising {count} older messages…"
SLOW = frozenset({"new", "reset", "compact", "forget"})  # typing at once, then `Progress`
REMEMBER_USAGE = "Usage: /remember <text> — I save it to this chat's memory."
FORGET_USAGE = (
    "Usage: /forget <text> (3 characters or more) — I remove it from everything I keep: "
    "memory, notes, history, items and our conversations."
)
CONTEXT_OWNERS_ONLY = "Only the bot's owner can see its prompts."
CONTEXT_USAGE = (
    "Usage: /context — the last prompt's parts and their tokens; /context full sends the whole "
    "prompt as a file."
)
CONTEXT_NONE = (
    "No prompt was sent in this chat since the bot started. Send a message, then /context again "
    "(or, in a shell: python -m bot prompt --chat {key})."
)
CONTEXT_FULL_HINT = "/context full sends the whole prompt as a file."
COMPACT_USAGE = (
    "Usage: /compact [N] — summarise all but the last N messages (N a positive whole number; "
    "{keep} when left out)."
)


class Progress(Protocol):
    """What a slow command tells the chat it is doing (`bot.turn.progress.ProgressNotice`)."""

    def doing(self, text: str) -> None: ...


class _Quiet:
    def doing(self, text: str) -> None:
        pass


class CommandMemory(QuoteKeeper, Protocol):
    """What the commands write to memory (`MemoryWriter`)."""

    async def remember(
        self, scope: MemoryScope, fact: str, origin: Provenance | None = None
    ) -> str | None: ...

    async def clear_working(self, session_key: str) -> None: ...

    async def forget(self, scope: MemoryScope, session_key: str, needle: str) -> Forgotten: ...

    async def undo(self, session_key: str) -> tuple[Undone | None, bool]: ...


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
        model: str,
        pipeline: Sequence[str],
        access: AccessPolicy,
        consolidator: ConsolidationQueue | None = None,  # None: /new does not consolidate
        memory: CommandMemory,
        inventory: MemoryInventory,
        compactor: Compactor,
        meter: PromptMeter,
        history: HistoryLog,
        keep_last_messages: int,  # /compact without N
        sent: LastRequests,  # the last request of each chat (/context)
        undo_minutes: int = 10,  # how long a /forget can be undone
    ) -> None:
        self.sessions = sessions
        self.locks = locks
        self.running = running
        self.model = model
        self.pipeline = pipeline
        self.access = access
        self.consolidator = consolidator
        self.memory = memory
        self.inventory = inventory
        self.compactor = compactor
        self.meter = meter
        self.history = history
        self.keep_last_messages = keep_last_messages
        self.undo_minutes = undo_minutes
        self.sent = sent
        self._handlers: dict[str, Callable[[Inbound, str], Awaitable[str | Reply]]] = {
            "start": self._start,
            "help": self._help,
            "status": self._status,
            "stop": self._stop,
            "memory": self._memory,
            "remember": self._remember,
            "forget": self._forget,
            "undo": self._undo,
            "context": self._context,
            "keep": self._keep,
        }
        self._slow: dict[str, Callable[[Inbound, str, Progress], Awaitable[str]]] = {
            "new": self._new,
            "reset": self._new,
            "compact": self._compact,
        }

    def takes_time(self, command: Command) -> bool:
        """A command that may take seconds (a model call, a sweep of every file): the channel
        shows typing from its start and `Progress` says what it is doing."""
        return command.name in SLOW

    async def run(
        self, command: Command, inbound: Inbound, *, progress: Progress | None = None
    ) -> Reply:
        """What to answer: the handler's, or a hint for an unknown command."""
        if (slow := self._slow.get(command.name)) is not None:
            return Reply(await slow(inbound, command.args, progress or _Quiet()))
        handler = self._handlers.get(command.name)
        if handler is None:
            return Reply(f"Unknown command /{command.name}. /help lists what I understand.")
        answer = await handler(inbound, command.args)
        return answer if isinstance(answer, Reply) else Reply(answer)

    async def _start(self, inbound: Inbound, args: str) -> str:
        return GREETING

    async def _help(self, inbound: Inbound, args: str) -> str:
        owner = inbound.is_private and self.access.is_owner(inbound.user_id)
        return OWNER_HELP if owner else HELP

    async def _new(self, inbound: Inbound, args: str, progress: Progress) -> str:
        """Consolidate the session (awaited, bounded; raw fallback), then archive it."""
        key = inbound.session_key
        async with self.locks.hold(key):
            session = await self.sessions.load(key)
            reply = NEW_EMPTY
            if session.messages and self.consolidator is not None:
                messages = _plural(len(session.messages), "message")
                progress.doing(NEW_SAVING.format(messages=messages))
                scope = self.access.scope_for(inbound)
                job = new_job(scope, key, session.messages, at=inbound.received_at)
                saved = await self.consolidator.consolidate_now(job)
                reply = (NEW_SAVED if saved else NEW_RAW).format(messages=messages)
            await self.sessions.archive(key)
            await self.memory.clear_working(key)
        return reply

    async def _compact(self, inbound: Inbound, args: str, progress: Progress) -> str:
        """Summarise all but the last N messages now, under the chat's lock."""
        keep = keep_count(args, default=self.keep_last_messages)
        if keep is None:
            return COMPACT_USAGE.format(keep=self.keep_last_messages)
        key, scope = inbound.session_key, self.access.scope_for(inbound)
        async with self.locks.hold(key):
            session = await self.sessions.load(key)
            progress.doing(COMPACTING.format(count=max(len(session.messages) - keep, 0)))
            result = await self.compactor.compact(session, keep=keep, reason="manual", scope=scope)
        return compact_receipt(result, keep=keep)

    async def _status(self, inbound: Inbound, args: str) -> str:
        session = await self.sessions.load(inbound.session_key)
        estimate = self.meter.estimate(session)
        scope = self.access.scope_for(inbound)
        status = Status(
            messages=len(session.messages),
            tokens=estimate.tokens,
            window=estimate.window,
            window_source=self.meter.windows.source(self.model),
            reported=session.last_prompt_tokens or 0,
            compactions=session.compactions,
            last_compaction=await asyncio.to_thread(self.history.last_compaction, scope),
            last_consolidation=await asyncio.to_thread(self.history.last_consolidation, scope),
            model=self.model,
            pipeline=self.pipeline,
            running=self.running.is_running(inbound.session_key),
        )
        return render_status(status, verbose=wants_verbose(args))

    async def _stop(self, inbound: Inbound, args: str) -> str:
        if self.running.stop(inbound.session_key):
            return "Stopped."
        return "Nothing to stop."

    async def _memory(self, inbound: Inbound, args: str) -> str:
        return await self.inventory.describe(self.access.scope_for(inbound), inbound.session_key)

    async def _remember(self, inbound: Inbound, args: str) -> str:
        if not args:
            return REMEMBER_USAGE
        try:
            scope, origin = self.access.scope_for(inbound), said_by(inbound)
            saved = await self.memory.remember(scope, args, origin)
        except NotTextError as exc:
            return str(exc)  # what to fix, e.g. "MEMORY.md is not UTF-8 text, …"
        return f"Saved to memory: {saved}" if saved else "I already had that."

    async def _forget(self, inbound: Inbound, args: str) -> str:
        if len(args) < FORGET_MIN_CHARS:
            return FORGET_USAGE
        scope, key = self.access.scope_for(inbound), inbound.session_key
        async with self.locks.hold(key):  # no note is appended meanwhile
            forgotten = await self.memory.forget(scope, key, args)
        return forget_receipt(args, forgotten, undo_minutes=self.undo_minutes)

    async def _context(self, inbound: Inbound, args: str) -> str | Reply:
        """The last request's parts counted; with `full` (or `file`) the whole text as a file."""
        if not self.access.is_owner(inbound.user_id):
            return CONTEXT_OWNERS_ONLY
        if args.lower() not in ("", "full", "file"):
            return CONTEXT_USAGE
        sent = self.sent.last(inbound.session_key)
        if sent is None:
            return CONTEXT_NONE.format(key=inbound.session_key)
        tokens, window = self.meter.tokens, self.meter.window
        found = await asyncio.to_thread(breakdown, sent, tokens, window=window)
        table = summary(found, title=f"Tokens ({self.model}, counted offline):")
        text = f"Last prompt in this chat, sent {sent.at:%Y-%m-%d %H:%M}.\n```\n{table}\n```"
        if not args:
            return f"{text}\n{CONTEXT_FULL_HINT}"
        name = f"context-{sent.at:%Y%m%d-%H%M%S}.txt"
        return Reply(text, Document(name=name, text=full_text(sent), caption="The whole prompt"))

    async def _keep(self, inbound: Inbound, args: str) -> str:
        owner = self.access.is_owner(inbound.user_id)
        scope = self.access.scope_for(inbound)
        return await keep(self.memory, inbound, args, scope=scope, owner=owner)

    async def _undo(self, inbound: Inbound, args: str) -> str:
        async with self.locks.hold(inbound.session_key):
            undone, expired = await self.memory.undo(inbound.session_key)
        return undo_receipt(undone, expired=expired, undo_minutes=self.undo_minutes)


def keep_count(args: str, *, default: int) -> int | None:
    """/compact's N: `default` when absent, None unless a positive whole number."""
    if not args:
        return default
    return int(args) if args.isdecimal() and int(args) > 0 else None


def compact_receipt(result: CompactionResult, *, keep: int) -> str:
    """What /compact did: messages and tokens before → after, by summary or by dropping."""
    before, after = result.messages_before, result.messages_after
    if not result.compacted:
        if before <= keep:
            return f"Nothing to compact: {before} messages, and /compact keeps the last {keep}."
        return (
            f"Nothing to compact: what comes before the last {keep} messages is already a "
            "summary, or part of the same exchange with tools."
        )
    how = (
        "The older messages are now one summary"
        if result.summarized
        else "The model could not summarise, so I dropped the oldest messages"
    )
    return (
        f"Compacted: {before} → {after} messages, "
        f"~{result.tokens_before:,} → ~{result.tokens_after:,} tokens. "
        f"{how}; a verbatim copy is in the history."
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
