"""`Reminder` and its `Rule`: one item a chat scheduled, and when it is next due.

Times are read in the person's own zone. A cron rule walks local wall-clock time (`croniter`
over naive local datetimes) and each occurrence is placed in the zone then, so "every day at
09:00" is 09:00 before and after a DST change. A one-off is one instant, kept with the local
offset it was read at ("in 20 minutes" across the change is 20 minutes). A local time a change
skips (02:30 on the spring-forward night) lands an hour later; one it repeats is taken the
first time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo

from croniter import croniter

Kind = Literal["reminder", "task"]  # a task asks the model to do something (`bot.reminders.tasks`)


class RuleError(ValueError):
    """A rule that cannot be read (the message says why, in words)."""


@dataclass(frozen=True)
class Rule:
    """Once at `at` (local wall time), or every time `cron` matches (local wall time)."""

    at: datetime | None = None  # aware: the instant, with the local offset it was read at
    cron: str | None = None  # five fields: minute hour day month weekday

    def __post_init__(self) -> None:
        if (self.at is None) == (self.cron is None):
            raise RuleError("a rule is either one time (at) or a cron expression, not both")
        if self.at is not None and self.at.tzinfo is None:
            raise RuleError("a one-off time needs its offset")
        if self.cron is not None and not croniter.is_valid(self.cron):
            raise RuleError(f"{self.cron!r} is not a cron expression (e.g. '0 8 * * 1')")

    @property
    def recurring(self) -> bool:
        return self.cron is not None

    def after(self, moment: datetime, zone: ZoneInfo) -> datetime | None:
        """The first occurrence strictly after `moment` (aware), in UTC; None when none is
        left (a one-off already past)."""
        if self.at is not None:
            return self.at.astimezone(UTC) if self.at > moment else None
        local = moment.astimezone(zone).replace(tzinfo=None)
        wall = croniter(self.cron, local).get_next(datetime)
        return placed(wall, zone)

    def describe(self) -> str:
        return f"every '{self.cron}'" if self.cron else "once"


def placed(wall: datetime, zone: ZoneInfo) -> datetime:
    """A local wall time in `zone`, as UTC (a skipped time moves forward with the clock)."""
    return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)


@dataclass(frozen=True)
class Reminder:
    id: str
    chat: str  # the session key of the chat it was made in: where it is delivered
    channel: str
    chat_id: int
    chat_type: str
    user_id: int  # who asked
    zone: str  # the time zone its rule is read in
    text: str
    rule: Rule
    next_at: datetime | None  # UTC; None: done
    created_at: datetime
    kind: Kind = "reminder"
    thread_id: int | None = None
    message_id: int | None = None  # the message that asked: a group's reminder replies to it
    on_time_only: bool = False  # missed while the bot was down: dropped, not sent late

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.zone)

    @staticmethod
    def zone_info(name: str) -> ZoneInfo:
        return ZoneInfo(name)

    def advanced(self, past: datetime) -> Reminder:
        """The item with its next occurrence after `past` (None when it is done)."""
        return replace(self, next_at=self.rule.after(past, self.tz))

    def local(self, moment: datetime) -> str:
        """`moment` as this item's person reads it: "Fri 2026-11-27 09:00 (Europe/Lisbon)"."""
        return f"{moment.astimezone(self.tz):%a %Y-%m-%d %H:%M} ({self.zone})"

    def line(self) -> str:
        """One line for a list: id, next time, rule, text."""
        when = self.local(self.next_at) if self.next_at else "done"
        what = "task" if self.kind == "task" else "reminder"
        return f"[{self.id}] {when}, {self.rule.describe()} {what}: {self.text}"


def encode(item: Reminder) -> dict[str, Any]:
    rule: dict[str, str] = (
        {"at": item.rule.at.isoformat()} if item.rule.at else {"cron": item.rule.cron or ""}
    )
    return {
        "id": item.id,
        "chat": item.chat,
        "channel": item.channel,
        "chat_id": item.chat_id,
        "chat_type": item.chat_type,
        "user_id": item.user_id,
        "zone": item.zone,
        "text": item.text,
        "kind": item.kind,
        "rule": rule,
        "next_at": item.next_at.isoformat() if item.next_at else None,
        "created_at": item.created_at.isoformat(),
        "thread_id": item.thread_id,
        "message_id": item.message_id,
        "on_time_only": item.on_time_only,
    }


def decode(raw: dict[str, Any]) -> Reminder:
    """An item read back; `ValueError`/`KeyError`/`TypeError` when it is not one."""
    rule_raw = raw["rule"]
    at = rule_raw.get("at")
    rule = Rule(at=datetime.fromisoformat(at) if at else None, cron=rule_raw.get("cron"))
    ZoneInfo(str(raw["zone"]))  # an unknown zone fails here, not at delivery
    kind = raw.get("kind", "reminder")
    if kind not in ("reminder", "task"):
        raise ValueError(f"unknown kind {kind!r}")
    next_at = raw.get("next_at")
    return Reminder(
        id=str(raw["id"]),
        chat=str(raw["chat"]),
        channel=str(raw["channel"]),
        chat_id=int(raw["chat_id"]),
        chat_type=str(raw.get("chat_type", "private")),
        user_id=int(raw["user_id"]),
        zone=str(raw["zone"]),
        text=str(raw["text"]),
        rule=rule,
        next_at=_utc(next_at) if next_at else None,
        created_at=_utc(raw["created_at"]),
        kind=kind,
        thread_id=raw.get("thread_id"),
        message_id=raw.get("message_id"),
        on_time_only=bool(raw.get("on_time_only", False)),
    )


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no offset")
    return moment.astimezone(UTC)
