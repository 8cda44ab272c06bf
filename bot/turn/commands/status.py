"""/status: the conversation in plain words, and more with `/status verbose` (or -v); and
/context (owners only: the last prompt's parts and tokens, `bot.llm.inspection`).

    Messages: 12
    Context: 3,210 of 32,768 tokens (10%), the next prompt with its instructions, memory, …
    Last compaction: 2026-11-21 09:30 (1 in this conversation)
    Last consolidation: none yet
    Model: gpt-4o-mini

The context figure is the one /context, /compact and `python -m bot prompt` give too
(`PromptPreview.estimate`, said by `meter.how_full`). The verbose form adds where the window
comes from, how that figure is counted (`meter.how_counted`, also under /context's table), the
provider's count of the last prompt, and the pipeline's systems by order. With replicas (a
`QueueLook` on the chats' shared queue) it also says how many of the chat's messages wait their
turn, and, to an owner in the verbose form, what the whole cluster is doing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import Protocol

from bot import shell
from bot.llm.inspection import LastRequests, breakdown, full_text, summary
from bot.llm.meter import PromptEstimate, how_counted, how_full
from bot.memory.notes.history import HistoryLog
from bot.models import Document, Inbound
from bot.storage.sessions import SessionStore
from bot.turn.access import AccessPolicy
from bot.turn.chats import RunningTurns
from bot.turn.commands.handler import Progress, Reply
from bot.turn.preview import PromptPreview

VERBOSE = frozenset({"verbose", "-v", "--verbose", "v", "all"})
WHEN = "%Y-%m-%d %H:%M"
HINT_VERBOSE = "/status verbose shows the details."
CONTEXT_OWNERS_ONLY = "Only the bot's owner can see its prompts."
CONTEXT_USAGE = (
    "Usage: /context — the last prompt's parts and their tokens; /context full sends the whole "
    "prompt as a file."
)
CONTEXT_NONE = (
    "No prompt was sent in this chat since the bot started. Send a message, then /context again "
    "(or, where the bot runs: " + shell.in_template("prompt --chat") + " {key})."
)
CONTEXT_FULL_HINT = "/context full sends the whole prompt as a file."


@dataclass(frozen=True)
class Queued:
    """What the chats' queue holds, every replica's (replicated mode)."""

    waiting: int  # this chat's messages waiting for their turn
    running: int  # messages being answered now, in every chat (not the one asking)
    queued: int  # messages waiting, in every chat
    replicas: int  # replicas alive (beating)


class QueueLook(Protocol):
    async def look(self, session_key: str) -> Queued | None:
        """The queue as it is now, asked from the chat's own turn; None when it cannot be read."""
        ...


@dataclass(frozen=True)
class Status:
    messages: int
    estimate: PromptEstimate  # the next prompt (`PromptMeter`), against the model's window
    margin: float  # the meter's, on top of the corrected count
    window_source: str  # where `window` comes from, for a person to read
    reported: int  # the last prompt's tokens as the provider reported them; 0: none yet
    compactions: int  # in this conversation
    last_compaction: datetime | None  # in this chat's memory, any conversation
    last_consolidation: datetime | None
    model: str
    pipeline: Sequence[str]
    running: bool  # a reply is in progress
    queued: Queued | None = None  # replicated mode: the shared queue
    owner: bool = False  # an owner asks: the cluster's figures too


def wants_verbose(args: str) -> bool:
    return args.strip().lower() in VERBOSE


def render(status: Status, *, verbose: bool) -> str:
    lines = [
        f"Messages: {status.messages}",
        how_full(status.estimate),
        f"Last compaction: {_when(status.last_compaction)}" + _count(status.compactions),
        f"Last consolidation: {_when(status.last_consolidation)}",
        f"Model: {status.model}",
    ]
    if verbose:
        lines += _details(status)
    if status.running:
        lines.append("A reply is in progress (/stop cancels it).")
    if status.queued is not None and status.queued.waiting:
        lines.append(f"Waiting their turn: {status.queued.waiting} more of this chat's messages.")
    if not verbose:
        lines.append(HINT_VERBOSE)
    return "\n".join(lines)


def _details(status: Status) -> list[str]:
    window = f"{status.estimate.window:,}"
    reported = (
        f"Last prompt, as the provider counted it: {status.reported:,} tokens"
        if status.reported
        else "Last prompt: none yet"
    )
    return [
        f"Context window: {window} tokens ({status.window_source})",
        how_counted(status.estimate, status.margin),
        reported,
        f"Pipeline: {', '.join(status.pipeline)}",
        *(_cluster(status.queued) if status.queued is not None and status.owner else []),
    ]


def _cluster(queued: Queued) -> list[str]:
    return [
        f"Replicas: {queued.replicas} alive; {queued.running} other messages being answered, "
        f"{queued.queued} waiting (every chat)"
    ]


def _when(at: datetime | None) -> str:
    return f"{at:{WHEN}}" if at else "none yet"


def _count(compactions: int) -> str:
    return f" ({compactions} in this conversation)" if compactions else ""


@dataclass(eq=False)
class ShowStatus:
    names = ("status",)
    slow = False

    sessions: SessionStore
    gauge: PromptPreview  # how full the next prompt is (its meter: the window, the margin)
    history: HistoryLog
    running: RunningTurns
    access: AccessPolicy
    _: KW_ONLY
    model: str
    pipeline: Sequence[str]  # the pipeline's systems by order
    queue: QueueLook | None = None  # replicated mode: the chats' shared queue

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        session = await self.sessions.load(inbound.session_key)
        scope = self.access.scope_for(inbound)
        meter = self.gauge.meter
        status = Status(
            messages=len(session.messages),
            estimate=await self.gauge.estimate(inbound, session),
            margin=meter.margin,
            window_source=meter.windows.source(self.model),
            reported=session.last_prompt_tokens or 0,
            compactions=session.compactions,
            last_compaction=await asyncio.to_thread(self.history.last_compaction, scope),
            last_consolidation=await asyncio.to_thread(self.history.last_consolidation, scope),
            model=self.model,
            pipeline=self.pipeline,
            running=self.running.is_running(inbound.session_key),
            queued=await self.queue.look(inbound.session_key) if self.queue else None,
            owner=self.access.is_owner(inbound.user_id),
        )
        return render(status, verbose=wants_verbose(args))


@dataclass(eq=False)
class ShowContext:
    """The last request's parts counted; with `full` (or `file`) the whole text as a file."""

    names = ("context",)
    slow = False

    sent: LastRequests
    gauge: PromptPreview  # how full the next prompt is (its meter counts the parts)
    access: AccessPolicy
    sessions: SessionStore
    _: KW_ONLY
    model: str

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str | Reply:
        if not self.access.is_owner(inbound.user_id):
            return CONTEXT_OWNERS_ONLY
        if args.lower() not in ("", "full", "file"):
            return CONTEXT_USAGE
        sent = self.sent.last(inbound.session_key)
        if sent is None:
            return CONTEXT_NONE.format(key=inbound.session_key)
        meter = self.gauge.meter
        found = await asyncio.to_thread(breakdown, sent, meter.tokens, window=meter.window)
        table = summary(found, title=f"Tokens ({self.model}, counted offline):")
        session = await self.sessions.load(inbound.session_key)
        estimate = await self.gauge.estimate(inbound, session)
        text = (
            f"{how_full(estimate)}.\nLast prompt in this chat, sent {sent.at:%Y-%m-%d %H:%M}:"
            f"\n```\n{table}\n```\n{how_counted(estimate, meter.margin)}."
        )
        if not args:
            return f"{text}\n{CONTEXT_FULL_HINT}"
        name = f"context-{sent.at:%Y%m%d-%H%M%S}.txt"
        return Reply(text, Document(name=name, text=full_text(sent), caption="The whole prompt"))
