"""`UsageLedger`: tokens and calls per day, chat, kind and model, in `state/usage.json`.

    {"version": 1, "days": {"2026-11-27": {"telegram:42": {"reply": {"gpt-4o-mini":
        {"in": 1200, "out": 80, "cached": 1024, "calls": 2}}}}}}

Only this month's days and last month's are kept (older days are dropped at the next write), so
the file stays small. Each record is a locked read-modify-write, written atomically.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import structlog

from bot.models import Usage
from bot.storage.files import Locks, atomic_write_text

log = structlog.get_logger(__name__)
VERSION = 1
KINDS = ("reply", "consolidation", "flush", "compaction", "transcription", "task")
BACKGROUND = frozenset({"consolidation", "flush", "compaction"})


@dataclass(frozen=True)
class Spent:
    """One line of the ledger: what one model cost one chat for one kind of work on one day."""

    day: str
    chat: str
    kind: str
    model: str
    tokens_in: int
    tokens_out: int
    cached: int
    calls: int

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


class UsageLedger:
    def __init__(self, path: Path, locks: Locks, *, now: Callable[[], datetime]) -> None:
        self.path = path
        self.locks = locks
        self.now = now

    async def record(self, chat: str, kind: str, model: str, usage: Usage) -> None:
        today = self.now().date()
        async with self.locks.hold(self.path):
            document = await asyncio.to_thread(self.read)
            days: dict[str, Any] = document["days"]
            for day in [d for d in days if not _kept(d, today)]:
                del days[day]
            models = days.setdefault(today.isoformat(), {}).setdefault(chat, {})
            entry = models.setdefault(kind, {}).setdefault(
                model, {"in": 0, "out": 0, "cached": 0, "calls": 0}
            )
            entry["in"] += usage.prompt_tokens
            entry["out"] += usage.completion_tokens
            entry["cached"] += usage.cached_tokens
            entry["calls"] += 1
            text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
            await asyncio.to_thread(atomic_write_text, self.path, text)

    def read(self) -> dict[str, Any]:
        """The document (blocking); an empty one when there is none or it cannot be read."""
        empty: dict[str, Any] = {"version": VERSION, "days": {}}
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return empty
        except (OSError, ValueError) as exc:
            log.warning("usage_unreadable", path=str(self.path), reason=str(exc)[:200])
            return empty
        if not isinstance(document, dict) or document.get("version") != VERSION:
            return empty
        days = document.get("days")
        return {"version": VERSION, "days": days if isinstance(days, dict) else {}}

    def lines(self) -> list[Spent]:
        """Every line of the ledger (blocking)."""
        return list(_lines(self.read()["days"]))

    def tokens(self, day: date, *, chat: str | None = None, kinds: Iterable[str] = KINDS) -> int:
        """Tokens in and out on `day`, for `chat` (None: every chat) and `kinds` (blocking)."""
        wanted, today = set(kinds), day.isoformat()
        return sum(
            s.tokens
            for s in self.lines()
            if s.day == today and s.kind in wanted and (chat is None or s.chat == chat)
        )


def _lines(days: dict[str, Any]) -> Iterator[Spent]:
    for day, chats in days.items():
        for chat, kinds in _items(chats):
            for kind, models in _items(kinds):
                for model, n in _items(models):
                    yield Spent(
                        day=day,
                        chat=chat,
                        kind=kind,
                        model=model,
                        tokens_in=_int(n.get("in")),
                        tokens_out=_int(n.get("out")),
                        cached=_int(n.get("cached")),
                        calls=_int(n.get("calls")),
                    )


def _items(value: object) -> list[tuple[str, dict[str, Any]]]:
    if not isinstance(value, dict):
        return []
    return [(k, v) for k, v in value.items() if isinstance(v, dict)]


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _kept(day: str, today: date) -> bool:
    """This month's days and last month's."""
    try:
        then = date.fromisoformat(day)
    except ValueError:
        return False
    months = (today.year - then.year) * 12 + today.month - then.month
    return 0 <= months <= 1
