"""Session compaction: a session's old messages become one summary message.

    compact(session, keep=N) ─▶ cut before the last N messages, at a user message
        ├─ summary by the fast model (`bot.conversation.summary`: in stages when the old
        │   messages do not fit its window; tool results left out, each message cut short;
        │   an earlier summary is summarised with the rest, so summaries chain)
        ├─ checkpoint: the old messages kept whole as a session archive file, and a
        │   `[checkpoint]` entry in the scope's history naming it
        └─ session = [system "[Conversation summary]\\n…", *the last messages], saved;
           if the model fails: the session as it was (nothing dropped; logged)

The cut never parts a tool call from its results; consolidation (system 50) cuts by the same
rule, `cut_point`. Not to be confused with `log_compaction`, which folds old daily notes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal, Protocol

import structlog

from bot.conversation.shortening import shortened
from bot.conversation.summary import ROLE, SUMMARY_HEADER, StagedSummary, is_summary
from bot.llm.client import LLM
from bot.llm.meter import PromptMeter
from bot.memory.notes.history import checkpoint_entry
from bot.models import ChatMessage, MemoryScope, Session
from bot.settings import Settings
from bot.storage.sessions import SessionStore

log = structlog.get_logger(__name__)

__all__ = ["ROLE", "SUMMARY_HEADER", "CompactionResult", "Compactor", "cut_point", "is_summary"]
Outcome = Literal["summary", "failed", "shortened", "unchanged"]


@dataclass(frozen=True)
class CompactionResult:
    session: Session  # the compacted (and saved) session; the same one when unchanged
    outcome: Outcome  # "summary": the model's; "failed": the model's summary failed, the old
    # messages stay; "shortened": only a kept message cut (`shortening`); "unchanged": nothing
    # to do
    messages_before: int
    messages_after: int
    tokens_before: int  # estimated prompt tokens (`PromptMeter`)
    tokens_after: int

    @property
    def compacted(self) -> bool:
        return self.outcome in ("summary", "shortened")

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def summarized(self) -> bool:
        return self.outcome == "summary"


class HistoryWriter(Protocol):
    """Where the checkpoint goes: the scope's history, through the memory writer."""

    async def append_history(self, scope: MemoryScope, entry: str, at: datetime) -> None: ...


class Compactor:
    def __init__(
        self,
        *,
        llm: LLM,
        model: str,  # the fast tier
        sessions: SessionStore,
        history: HistoryWriter,
        meter: PromptMeter,
        now: Callable[[], datetime],
        temperature: float,
        max_tokens: int,
        timeout: float,
        message_chars: int,
    ) -> None:
        self.sessions = sessions
        self.history = history
        self.meter = meter
        self.now = now
        self.summary = StagedSummary(
            llm,
            model=model,
            window=lambda: meter.windows.for_model(model),
            tokens=meter.tokens,
            now=now,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout,
            message_chars=message_chars,
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        llm: LLM,
        sessions: SessionStore,
        history: HistoryWriter,
        meter: PromptMeter,
        now: Callable[[], datetime],
    ) -> Compactor:
        """Summaries by the fast model (the model when none is set)."""
        config = settings.compaction
        return cls(
            llm=llm,
            model=settings.llm.fast_model or settings.llm.model,
            sessions=sessions,
            history=history,
            meter=meter,
            now=now,
            temperature=config.summary_temperature,
            max_tokens=config.summary_max_tokens,
            timeout=config.summary_timeout,
            message_chars=config.message_chars,
        )

    async def compact(
        self,
        session: Session,
        *,
        keep: int,
        reason: str,
        scope: MemoryScope,
        keep_tokens: int | None = None,  # the kept messages' most, as the meter counts them
    ) -> CompactionResult:
        """Summarise all but the last `keep` messages (or more, to cut at a user message, or
        to keep no more than `keep_tokens`) into one system message, and save the session. The
        old messages are archived first (and the history of `scope` says where); if that
        fails, nothing is compacted (it raises). When the summary fails the old messages stay
        (outcome "failed")."""
        within = self._within(keep_tokens)
        cut = cut_point(session.messages, keep=keep, within=within)
        old, kept = session.messages[:cut], session.messages[cut:]
        short = shortened(kept, within) if within is not None else None
        head: tuple[ChatMessage, ...] = old
        outcome: Outcome = "shortened"
        if not old or (len(old) == 1 and is_summary(old[0])):
            if short is None:
                return self._result(session, session, "unchanged")
            old = ()  # only what is kept was too large: what leads the session stays
        if old:
            head, outcome = await self._summarized(scope, session, old, reason, kept=len(kept))
            if outcome == "failed":
                if short is None:
                    return self._result(session, session, "failed")
                outcome, old = "shortened", ()  # the old messages stay, as `head`
        if short is not None:
            await self._keep_whole(session, kept, short)
            kept = short
        compacted = replace(session, messages=(*head, *kept), compactions=session.compactions + 1)
        await self.sessions.save(compacted)
        result = self._result(session, compacted, outcome)
        log.info(
            "compacted",
            reason=reason,
            by=result.outcome,
            removed=len(old),
            kept=len(kept),
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
        )
        return result

    def _within(self, limit: int | None) -> Callable[[Sequence[ChatMessage]], bool] | None:
        """Whether kept messages take no more than `limit` tokens; None without a limit."""
        if limit is None:
            return None
        return lambda kept: self.meter.tokens.count_messages(kept) <= limit

    async def _summarized(
        self,
        scope: MemoryScope,
        session: Session,
        old: Sequence[ChatMessage],
        reason: str,
        *,
        kept: int,  # messages after `old`, for the log
    ) -> tuple[tuple[ChatMessage, ...], Outcome]:
        """What leads the session in place of `old`: the model's summary (`old` archived
        first), or on failure `old` itself (nothing dropped; logged)."""
        summary = await self.summarize(old)
        if summary is None:
            log.warning("compaction_failed", reason=reason, old=len(old), kept=kept)
            return tuple(old), "failed"
        await self._checkpoint(scope, session, old, reason)
        text = summary_text(summary)
        return (ChatMessage(role="system", content=text, at=self.now()),), "summary"

    async def _keep_whole(
        self, session: Session, kept: Sequence[ChatMessage], short: Sequence[ChatMessage]
    ) -> None:
        """Archive the kept messages whole before some are shortened (`shortening`)."""
        where = await self.sessions.archive_part(session, kept)
        cut = [i for i, (a, b) in enumerate(zip(kept, short, strict=True)) if a != b]
        log.warning("message_shortened", messages=len(cut), archived=where.name if where else None)

    def room(self, session: Session, *, share: float, under: int | None = None) -> int:
        """`share` of the tokens the session's conversation has under an estimate of `under`
        (default: the window, with room kept for the answer): what a compaction may keep."""
        limit = self.meter.window - self.meter.output_reserve if under is None else under
        return int(share * self.meter.conversation_room(session, limit))

    async def summarize(self, messages: Sequence[ChatMessage]) -> str | None:
        """The fast model's summary of `messages` (without the header), in stages when they
        do not fit its window; None — logged — when the model fails, times out or answers
        nothing."""
        return await self.summary.summarize(messages)

    async def _checkpoint(
        self, scope: MemoryScope, session: Session, messages: Sequence[ChatMessage], reason: str
    ) -> None:
        kept = await self.sessions.archive_part(session, messages)
        where = kept.relative_to(self.sessions.workspace.root).as_posix() if kept else "nowhere"
        entry = checkpoint_entry(len(messages), reason=reason, where=where)
        await self.history.append_history(scope, entry, self.now())

    def _result(self, before: Session, after: Session, outcome: Outcome) -> CompactionResult:
        return CompactionResult(
            session=after,
            outcome=outcome,
            messages_before=len(before.messages),
            messages_after=len(after.messages),
            tokens_before=self.meter.estimate(before).tokens,
            tokens_after=self.meter.estimate(after).tokens,
        )


def cut_point(
    messages: Sequence[ChatMessage],
    *,
    keep: int,
    within: Callable[[Sequence[ChatMessage]], bool] | None = None,
) -> int:
    """Where to cut a conversation: at least `keep` messages stay, and the kept part starts
    at a user message (so a tool call is never parted from its results). With `within`, the
    kept part is cut shorter, a turn at a time, until `within` accepts it (the last turn stays
    whatever its size). 0 when there is no such place."""
    cut = max(0, len(messages) - keep)
    while cut > 0 and messages[cut].role != "user":
        cut -= 1
    if within is None:
        return cut
    starts = [i for i in range(cut, len(messages)) if messages[i].role == "user"]
    return next((i for i in starts if within(messages[i:])), starts[-1] if starts else cut)


def summary_text(summary: str) -> str:
    return f"{SUMMARY_HEADER}\n{summary.strip()}"
