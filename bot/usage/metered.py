"""Each model call checked against the day's caps, then recorded in the ledger.

`MeteredLLM` wraps the model client for one kind of work (the app gives each its own); the
chat a call is for is the one bound in structlog's context (`chat`), as the logs name it.

Caps (`usage.*` settings, tokens in and out per day; 0: none): `chat_daily_tokens` holds a
chat's replies, `background_daily_tokens` consolidation, flush and compaction across all chats.
An owner's private chat is exempt from both while `owners_exempt`. At `warn_share` of a cap the
owners hear one line; once it is reached they hear one more, and each call it holds raises
`LLMError` (cause `CAPPED`): a reply says so in the chat; background work falls back as it does
when the model fails (a raw note, old messages dropped with a verbatim copy kept).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import structlog

from bot.errors import LLMCause, LLMError
from bot.llm.client import LLM
from bot.models import ChatMessage, Completion, ToolSpec, Usage
from bot.usage.ledger import BACKGROUND, UsageLedger

log = structlog.get_logger(__name__)
Send = Callable[[int, str], Awaitable[None]]

CHAT_STOP = (
    "This chat has used its model budget for today ({limit:,} tokens); I can answer again tomorrow."
)
OWNER_CHAT_WARN = (
    "Chat {chat} has used {share:.0%} of its daily cap ({spent:,} of {limit:,} tokens)."
)
OWNER_CHAT_STOP = (
    "Chat {chat} reached its daily cap of {limit:,} tokens (usage.chat_daily_tokens): I stop "
    "answering there until tomorrow."
)
BACKGROUND_WARN = (
    "Background work (consolidation, flush, compaction) has used {share:.0%} of today's cap "
    "({spent:,} of {limit:,} tokens)."
)
BACKGROUND_STOP = (
    "Background work reached today's cap of {limit:,} tokens (usage.background_daily_tokens): "
    "consolidation, flush and compaction stop calling the model until tomorrow (conversations "
    "are kept as raw notes)."
)


def chat_of_work() -> str:
    """The chat the current work is for, as the logs name it ("" when none is bound)."""
    chat = structlog.contextvars.get_contextvars().get("chat", "")
    return chat if isinstance(chat, str) else ""


class OwnerLine:
    """One line to the owners, in their private chats, once a channel is connected (until
    then, and always, it is logged)."""

    def __init__(self, owners: Callable[[], Iterable[int]]) -> None:
        self.owners = owners  # read when a line goes (an owner may claim the bot meanwhile)
        self._send: Send | None = None

    def connect(self, send: Send) -> None:
        self._send = send

    async def tell(self, text: str) -> None:
        log.warning("usage_cap", line=text)
        if self._send is None:
            return
        for owner in sorted(self.owners()):
            try:
                await self._send(owner, text)
            except Exception:  # a notice's boundary: the work goes on
                log.warning("usage_line_failed", exc_info=True)


@dataclass(frozen=True)
class Limits:
    chat_daily_tokens: int = 0  # 0: no cap
    background_daily_tokens: int = 0
    owners_exempt: bool = True
    warn_share: float = 0.8


class Caps:
    def __init__(
        self,
        ledger: UsageLedger,
        limits: Limits,
        *,
        owner_chat: Callable[[str], bool],  # True for an owner's private chat
        line: OwnerLine,
        now: Callable[[], datetime],
    ) -> None:
        self.ledger = ledger
        self.limits = limits
        self.owner_chat = owner_chat
        self.line = line
        self.now = now
        self._told: set[tuple[str, str, str]] = set()  # (day, cap, "warn" | "stop")

    async def check(self, chat: str, kind: str) -> None:
        """`LLMError` (cause `CAPPED`) when the cap holding this call is reached."""
        reached = await self._reached(chat, kind)
        if reached is not None:
            stop = BACKGROUND_STOP if reached[0] == "background" else CHAT_STOP
            raise LLMError(stop.format(limit=reached[1]), cause=LLMCause.CAPPED)

    async def after(self, chat: str, kind: str) -> None:
        """The owners hear once a day when a cap is at `warn_share`, and when it is reached."""
        await self._reached(chat, kind, warn=True)

    async def _reached(self, chat: str, kind: str, *, warn: bool = False) -> tuple[str, int] | None:
        """The cap holding this call (its name and limit) when it is reached, the owners told
        once; with `warn`, told once too when it is at `warn_share`."""
        cap = self._cap(chat, kind)
        if cap is None:
            return None
        name, limit = cap
        spent = await self._spent(chat, kind)
        if spent >= limit:
            await self._tell_once(name, "stop", chat=chat, spent=spent, limit=limit)
            return cap
        if warn and spent >= self.limits.warn_share * limit:
            await self._tell_once(name, "warn", chat=chat, spent=spent, limit=limit)
        return None

    def _cap(self, chat: str, kind: str) -> tuple[str, int] | None:
        """(the cap's name, its tokens) holding a call, or None."""
        if self.limits.owners_exempt and self.owner_chat(chat):
            return None
        if kind in BACKGROUND:
            limit = self.limits.background_daily_tokens
            return ("background", limit) if limit else None
        limit = self.limits.chat_daily_tokens
        return (f"chat {chat}", limit) if limit and kind == "reply" else None

    async def _spent(self, chat: str, kind: str) -> int:
        today = self.now().date()
        if kind in BACKGROUND:
            return await asyncio.to_thread(self.ledger.tokens, today, kinds=BACKGROUND)
        return await asyncio.to_thread(self.ledger.tokens, today, chat=chat, kinds=("reply",))

    async def _tell_once(self, name: str, what: str, *, chat: str, spent: int, limit: int) -> None:
        key = (self.now().date().isoformat(), name, what)
        if key in self._told:
            return
        self._told.add(key)
        if name == "background":
            template = BACKGROUND_STOP if what == "stop" else BACKGROUND_WARN
        else:
            template = OWNER_CHAT_STOP if what == "stop" else OWNER_CHAT_WARN
        share = spent / limit
        await self.line.tell(template.format(chat=chat, spent=spent, limit=limit, share=share))


class MeteredLLM:
    """The model client for one kind of work, checked and recorded (`LLM`)."""

    def __init__(self, llm: LLM, kind: str, ledger: UsageLedger, caps: Caps | None) -> None:
        self.llm = llm
        self.kind = kind
        self.ledger = ledger
        self.caps = caps
        self.model = llm.model

    def as_kind(self, kind: str) -> MeteredLLM:
        return MeteredLLM(self.llm, kind, self.ledger, self.caps)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        chat = chat_of_work()
        if self.caps is not None:
            await self.caps.check(chat, self.kind)
        completion = await self.llm.complete(
            messages,
            tools=tools,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            on_text=on_text,
        )
        used = completion.model or model or self.model
        await record(self.ledger, chat, self.kind, used, completion.usage or Usage(0, 0))
        if self.caps is not None:
            await self.caps.after(chat, self.kind)
        return completion


async def record(ledger: UsageLedger, chat: str, kind: str, model: str, usage: Usage) -> None:
    """Into the ledger; a failure is logged and never costs the work its answer."""
    try:
        await ledger.record(chat, kind, model, usage)
    except OSError:
        log.warning("usage_record_failed", exc_info=True)


@dataclass(eq=False)
class MeteredTranscriber:
    """What a transcription reported, recorded as kind "transcription" (`OpenAITranscriber`'s
    `spent`)."""

    ledger: UsageLedger

    async def __call__(self, model: str, usage: Usage) -> None:
        await record(self.ledger, chat_of_work(), "transcription", model, usage)
