"""The turn pipeline: `TurnContext`, the `System` protocol, `StopTurn`, `BestEffort`, `Pipeline`.

A turn's logic lives here and nowhere else: ordered systems read and write one `TurnContext`
(and `LiveText`, where the runner shows the model's text as it comes).
Orders are a public contract (logs and /status name them); `Pipeline.describe()` is the one
place that lists them in the order they run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import structlog

from bot.errors import PipelineError, StoreAway
from bot.models import (
    ChatMessage,
    Image,
    Inbound,
    MemoryItem,
    MemoryScope,
    PromptPart,
    Recalled,
    Said,
    Session,
    StoredLine,
    Usage,
)

log = structlog.get_logger(__name__)


@dataclass
class TurnContext:
    """Everything one turn knows. Each field names the system that writes it."""

    inbound: Inbound  # runner
    turn_id: str  # runner
    scope: MemoryScope  # runner: whose memory this turn may see and write
    session: Session  # runner loads; 18 compacts; 50 replaces with the saved session
    user_message: ChatMessage  # runner (what came with the message read by `bot.media`)
    chatter: tuple[Said, ...] = ()  # runner: what the group said meanwhile (20 shows it)
    images: tuple[Image, ...] = ()  # runner (`bot.media`): shown with this message, never saved
    attached: str = ""  # runner (`bot.media`): a document's text, after this message, never saved
    system_prompt: str = ""  # 20: persona and instructions (and `# Memory`, see below)
    memory_prompt: str = ""  # 20: `# Memory`, a system message of its own after the first
    # 20: the user's message as the model gets it, after what this message recalls and the
    # time (new every turn); empty until 20 ran: the message alone
    message_prompt: tuple[ChatMessage, ...] = ()
    # 20: the named pieces of the system prompt, memory and the message's context (/context)
    prompt_parts: tuple[PromptPart, ...] = ()
    new_messages: list[ChatMessage] = field(default_factory=list)  # 30 adds; 40 strips tags
    reply: str | None = None  # 30 sets; 40 strips tags (what the user will see)
    usages: list[Usage] = field(default_factory=list)  # 30: one per completion, in order
    model: str = ""  # 30: the model that answered
    memory_shown: tuple[MemoryItem, ...] = ()  # 20: structured items the prompt showed
    # 20 (what the prompt's memory shows) and 30 (what memory tools returned): others' words
    # that came back through memory, with their sources (`bot.memory.trust`)
    recalled: list[Recalled] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)  # 30 (memory_forget); 50 saves none of it
    stored: list[StoredLine] = field(default_factory=list)  # 30 (memory_edit); 40
    # runner (a document's text, `bot.media`) and 50: the files the turn wrote; 55 indexes them
    written: list[Path] = field(default_factory=list)
    live: LiveText | None = None  # runner: where the model's text is shown as it comes (30 feeds)

    def request(self) -> list[ChatMessage]:
        """The turn's first request, laid out by system 20 from most stable to least: the
        system prompt, memory, the conversation, then this message with its context."""
        memory = (
            [ChatMessage(role="system", content=self.memory_prompt)] if self.memory_prompt else []
        )
        *context, message = self.message_prompt or (self.user_message,)
        return [
            ChatMessage(role="system", content=self.system_prompt),
            *memory,
            *self.session.messages,
            *context,
            self.sent(message),
        ]

    def sent(self, message: ChatMessage) -> ChatMessage:
        """The user's message as this turn's request carries it: with what came with it (a
        document's text after it, the images), which the session never keeps."""
        if self.attached:
            message = replace(message, content=f"{message.content or ''}\n\n{self.attached}")
        return replace(message, images=self.images) if self.images else message


class LiveText(Protocol):
    """The reply shown while the model writes it (`bot.turn.live`): fed by the tool loop."""

    def restart(self, *, calls_possible: bool) -> None:
        """A new answer starts (the next step); `calls_possible`: it may be tool calls
        written as text, not shown until it is clearly not."""
        ...

    def add(self, piece: str) -> None:
        """The next piece of the answer's text (never blocks)."""
        ...


class System(Protocol):
    """One step of a turn. `order` places it; `name` appears in logs and /status."""

    order: int
    name: str

    async def process(self, ctx: TurnContext) -> None: ...


class StopTurn(Exception):
    """Raised by a system to end the turn early; `reply`, if given, is sent to the user."""

    def __init__(self, reply: str | None = None) -> None:
        super().__init__(reply)
        self.reply = reply


class BestEffort:
    """Wraps a system whose failure must not cost the user the reply: log and go on (but for
    `StoreAway`: the whole turn is tried again once the shared database is back, nothing lost)."""

    def __init__(self, inner: System) -> None:
        self.inner = inner
        self.order = inner.order
        self.name = inner.name

    async def process(self, ctx: TurnContext) -> None:
        try:
            await self.inner.process(ctx)
        except (StopTurn, StoreAway):
            raise
        except Exception:
            log.warning("system_failed", system=self.name, order=self.order, exc_info=True)


class Pipeline:
    """Runs systems in ascending `order`; duplicate orders are a wiring error."""

    def __init__(self, systems: Iterable[System]) -> None:
        self.systems: Sequence[System] = sorted(systems, key=lambda s: s.order)
        orders = [s.order for s in self.systems]
        duplicates = sorted({o for o in orders if orders.count(o) > 1})
        if duplicates:
            raise PipelineError(f"duplicate system orders: {duplicates}")

    async def run(self, ctx: TurnContext) -> None:
        for system in self.systems:
            log.debug("system_start", system=system.name, order=system.order)
            await system.process(ctx)

    def describe(self) -> list[str]:
        """Each system as `order name`, in the order they run: the one list of the orders."""
        return [f"{s.order} {s.name}" for s in self.systems]
