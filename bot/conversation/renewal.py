"""Session freshness: when a conversation has gone stale, and starting the next one.

    FreshnessPolicy.expired(session) ─▶ the reason, or None   (daily boundary hour, idle minutes;
        a private chat, a group and a forum topic may each have their own, `by_kind`)
    SessionRenewal.renew(session, scope, reason) ─▶ Renewal
        ├─ summary of the old conversation (the `Summarizer`; its last lines when that fails)
        └─ the old conversation closed as /new closes it (`bot.conversation.closing`), its
            consolidation left to the background, the new one opening with the
            `[Conversation summary]` system message

The runner asks at turn start, under the chat lock, and sends `Renewal.notice` before the reply.
Both policies off (the default) means a session never expires; nor does an empty one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol

import structlog

from bot.conversation.closing import ConversationClose
from bot.conversation.compaction import summary_text
from bot.memory.upkeep.requests import conversation_lines
from bot.models import ChatMessage, MemoryScope, Session
from bot.settings import FreshnessSettings, SessionPolicySettings

log = structlog.get_logger(__name__)

CARRY_MESSAGES = 6  # when no summary: this many of the last user/assistant messages …
CARRY_CHARS = 300  # … each cut to this many characters
NO_SUMMARY = "No summary was available; the previous conversation ended with:"


class Summarizer(Protocol):
    """What renewal needs from compaction (`Compactor`): a summary, or None when the model
    fails."""

    async def summarize(self, messages: tuple[ChatMessage, ...]) -> str | None: ...


ChatKind = Literal["private", "group", "topic"]


def chat_kind(session_key: str) -> ChatKind:
    """What kind of chat a session key names: `telegram:<id>:<thread>` a forum topic,
    `telegram:<negative id>` a group, anything else a private chat (the console too)."""
    parts = session_key.split(":")
    if len(parts) >= 3:
        return "topic"
    return "group" if len(parts) == 2 and parts[1].startswith("-") else "private"


@dataclass(frozen=True)
class Freshness:
    daily_reset_hour: int | None  # local hour (the clock's zone); None: no daily boundary
    idle_minutes: int | None  # None: no idle expiry


@dataclass(frozen=True)
class FreshnessPolicy:
    daily_reset_hour: int | None  # local hour (the clock's zone); None: no daily boundary
    idle_minutes: int | None  # None: no idle expiry
    now: Callable[[], datetime]
    by_kind: Mapping[ChatKind, Freshness] = field(default_factory=dict)  # a kind's own rule

    @classmethod
    def from_settings(
        cls, config: SessionPolicySettings, now: Callable[[], datetime]
    ) -> FreshnessPolicy:
        """Each kind of chat's freshness: its own settings where set, else the general ones."""

        def rule(chat: FreshnessSettings, name: str) -> int | None:
            return getattr(chat if name in chat.model_fields_set else config, name)  # type: ignore[no-any-return]

        return cls(
            daily_reset_hour=config.daily_reset_hour,
            idle_minutes=config.idle_minutes,
            now=now,
            by_kind={
                kind: Freshness(rule(chat, "daily_reset_hour"), rule(chat, "idle_minutes"))
                for kind, chat in config.chats.items()
            },
        )

    def rule(self, session_key: str) -> Freshness:
        fallback = Freshness(self.daily_reset_hour, self.idle_minutes)
        return self.by_kind.get(chat_kind(session_key), fallback)

    def expired(self, session: Session) -> str | None:
        """Why the session is stale ("idle for 5 hours", "daily reset at 04:00"), or None."""
        if all(message.role == "system" for message in session.messages):
            return None  # nothing said since it started: nothing to close
        rule = self.rule(session.key)
        moment = self.now()
        updated = session.updated_at
        if updated.tzinfo is None:  # a hand-edited file: read it on the clock's wall time
            updated = updated.replace(tzinfo=moment.tzinfo)
        idle = moment - updated
        if rule.idle_minutes is not None and idle > timedelta(minutes=rule.idle_minutes):
            return f"idle for {duration_phrase(idle)}"
        hour = rule.daily_reset_hour
        if hour is not None and updated < last_boundary(moment, hour):
            return f"daily reset at {hour:02d}:00"
        return None


def last_boundary(moment: datetime, hour: int) -> datetime:
    """The most recent `hour`:00 at or before `moment`, on the wall clock of `moment`'s zone."""
    boundary = moment.replace(hour=hour, minute=0, second=0, microsecond=0)
    return boundary if boundary <= moment else boundary - timedelta(days=1)


def duration_phrase(span: timedelta) -> str:
    """ "45 minutes", "5 hours", "3 days": the largest unit that still reads naturally."""
    minutes = int(span.total_seconds() // 60)
    if minutes < 120:
        return _count(minutes, "minute")
    hours = minutes // 60
    return _count(hours, "hour") if hours < 48 else _count(hours // 24, "day")


def _count(number: int, unit: str) -> str:
    return f"{number} {unit}{'' if number == 1 else 's'}"


@dataclass(frozen=True)
class Renewal:
    session: Session  # the new conversation, already saved
    notice: str  # what the chat is told before the reply


class SessionRenewal:
    def __init__(
        self,
        *,
        policy: FreshnessPolicy,
        closing: ConversationClose,
        summarizer: Summarizer | None,  # None: carry the last messages instead
        now: Callable[[], datetime],
    ) -> None:
        self.policy = policy
        self.closing = closing
        self.summarizer = summarizer
        self.now = now

    def stale(self, session: Session) -> str | None:
        return self.policy.expired(session)

    async def renew(self, session: Session, scope: MemoryScope, *, reason: str) -> Renewal:
        """Close the stale `session` (consolidated in the background, archived) and open the
        next one with a summary of it."""
        log.info("session_expired", reason=reason, messages=len(session.messages))
        carried, summarized = await self._carried_text(session.messages)
        summary = ChatMessage(role="system", content=summary_text(carried), at=self.now())
        closed = await self.closing.close(
            session, scope, at=self.now(), wait=False, opening=(summary,), reason=reason
        )
        return Renewal(session=closed.session, notice=renewal_notice(reason, summarized=summarized))

    async def _carried_text(self, messages: tuple[ChatMessage, ...]) -> tuple[str, bool]:
        """The model's summary (and True), or the conversation's last lines (and False)."""
        summary = await self.summarizer.summarize(messages) if self.summarizer else None
        if summary and summary.strip():
            return summary.strip(), True
        log.warning("session_summary_unavailable", fallback="last messages")
        said = [m for m in messages if m.role in ("user", "assistant")]
        lines = conversation_lines(said, chars=CARRY_CHARS, zone=self.now().tzinfo)
        return "\n".join([NO_SUMMARY, *lines[-CARRY_MESSAGES:]]), False


def renewal_notice(reason: str, *, summarized: bool) -> str:
    if summarized:
        return f"New conversation ({reason}). I carried a summary of our last one over."
    return (
        f"New conversation ({reason}). I couldn't summarise our last one, "
        "so I carried its last messages over."
    )
