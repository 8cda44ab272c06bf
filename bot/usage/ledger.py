"""`UsageLedger`: tokens and calls per day, chat, kind and model, in `state/usage.json`.

    {"version": 1, "days": {"2026-11-27": {"telegram:42": {"reply": {"gpt-4o-mini":
        {"in": 1200, "out": 80, "cached": 1024, "calls": 2}}}}}}

Only this month's days and last month's are kept (older days are dropped at the next write), so
the file stays small. It is one of the workspace's documents (`Workspace.documents`): a file, or
with replicas a row they all share, so a daily cap counts every replica's calls. Each record is
a read-modify-write under the document's lock (`Locks`: shared by the replicas too), written
atomically. The parsed document is kept beside the document's version: a record or a cap's check
reads it again only when something else changed it, not at every model call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from typing import TypedDict

from bot import versioned
from bot.models import Usage
from bot.storage.files import ON_DISK, Documents, Locks, Signature
from bot.versioned import Fields, whole

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


Key = tuple[str, str, str, str]  # day, chat, kind, model
Lines = dict[Key, Spent]  # the ledger, in the document's order
Days = dict[str, dict[str, dict[str, dict[str, dict[str, int]]]]]  # day → chat → kind → model


class Document(TypedDict):
    version: int
    days: Days  # … → {"in", "out", "cached", "calls"}


class UsageLedger:
    def __init__(
        self,
        path: Path,
        locks: Locks,
        *,
        now: Callable[[], datetime],
        documents: Documents = ON_DISK,  # the workspace's (`Workspace.documents`)
    ) -> None:
        self.path = path
        self.locks = locks
        self.now = now
        self.documents = documents
        self._known: tuple[Signature, Lines] | None = None  # the file as last read
        self._waiting: list[tuple[date, str, str, str, Usage]] = []  # recorded, not yet written

    async def record(self, chat: str, kind: str, model: str, usage: Usage) -> None:
        """Written before it returns. Records that wait for the lock are written together by
        the first of them to get it: a burst of model calls (64 chats answered at once) costs
        a read and a write or two, not one each, one after another."""
        self._waiting.append((self.now().date(), chat, kind, model, usage))
        async with self.locks.hold(self.path):
            if not self._waiting:
                return  # a holder before us wrote it with its own
            taken, self._waiting = self._waiting, []
            try:
                lines = await asyncio.to_thread(self._read)
                for entry in taken:
                    lines = _added(lines, *entry)
                await asyncio.to_thread(self._write, lines)
            except BaseException:
                self._waiting[:0] = taken  # the next holder tries them again
                raise

    def _write(self, lines: Lines) -> None:
        text = versioned.encode(VERSION, {"days": _days(lines)}, compact=True)
        self.documents.write(self.path, text.encode("utf-8"))
        signature = self.documents.version(self.path)  # the lock held: none changed it since
        self._known = None if signature is None else (signature, lines)

    def read(self) -> Document:
        """The document (blocking); an empty one when there is none or it cannot be read."""
        return {"version": VERSION, "days": _days(self._read())}

    def _read(self) -> Lines:
        try:
            signature = self.documents.version(self.path)
        except OSError:
            signature = None
        if self._known is not None and self._known[0] == signature:
            return self._known[1]
        document = versioned.load(self.documents.read, self.path, VERSION, event="usage_unreadable")
        lines = {} if document is None else _lines(versioned.mapping(document.get("days")))
        if signature is not None:
            self._known = (signature, lines)
        return lines

    def lines(self) -> list[Spent]:
        """Every line of the ledger (blocking)."""
        return list(self._read().values())

    def tokens(self, day: date, *, chat: str | None = None, kinds: Iterable[str] = KINDS) -> int:
        """Tokens in and out on `day`, for `chat` (None: every chat) and `kinds` (blocking)."""
        wanted, today = set(kinds), day.isoformat()
        return sum(
            s.tokens
            for s in self.lines()
            if s.day == today and s.kind in wanted and (chat is None or s.chat == chat)
        )


def _lines(days: Fields) -> Lines:
    found: Lines = {}
    for day, chats in days.items():
        for chat, kinds in _items(chats):
            for kind, models in _items(kinds):
                for model, n in _items(models):
                    found[(day, chat, kind, model)] = Spent(
                        day=day,
                        chat=chat,
                        kind=kind,
                        model=model,
                        tokens_in=whole(n.get("in")),
                        tokens_out=whole(n.get("out")),
                        cached=whole(n.get("cached")),
                        calls=whole(n.get("calls")),
                    )
    return found


def _days(lines: Lines) -> Days:
    """The document's `days`."""
    days: Days = {}
    for s in lines.values():
        models = days.setdefault(s.day, {}).setdefault(s.chat, {}).setdefault(s.kind, {})
        models[s.model] = {
            "in": s.tokens_in,
            "out": s.tokens_out,
            "cached": s.cached,
            "calls": s.calls,
        }
    return days


def _added(lines: Lines, today: date, chat: str, kind: str, model: str, usage: Usage) -> Lines:
    """New lines: `lines` (left as they are, a reader may hold them) with `usage` added and the
    days no longer kept dropped."""
    kept = {key: s for key, s in lines.items() if _kept(key[0], today)}
    key = (today.isoformat(), chat, kind, model)
    was = kept.get(key) or Spent(*key, tokens_in=0, tokens_out=0, cached=0, calls=0)
    kept[key] = replace(
        was,
        tokens_in=was.tokens_in + usage.prompt_tokens,
        tokens_out=was.tokens_out + usage.completion_tokens,
        cached=was.cached + usage.cached_tokens,
        calls=was.calls + 1,
    )
    return kept


def _items(value: object) -> list[tuple[str, Fields]]:
    return [(k, v) for k, v in versioned.mapping(value).items() if isinstance(v, dict)]


def _kept(day: str, today: date) -> bool:
    """This month's days and last month's."""
    try:
        then = date.fromisoformat(day)
    except ValueError:
        return False
    months = (today.year - then.year) * 12 + today.month - then.month
    return 0 <= months <= 1
