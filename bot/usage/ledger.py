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
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import structlog

from bot.models import Usage
from bot.storage.files import ON_DISK, Documents, Locks, Signature

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
        self._known: tuple[Signature, dict[str, Any]] | None = None  # the file as last read
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
                document = await asyncio.to_thread(self.read)
                for entry in taken:
                    document = _added(document, *entry)
                text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
                await asyncio.to_thread(self._write, text, document)
            except BaseException:
                self._waiting[:0] = taken  # the next holder tries them again
                raise

    def _write(self, text: str, document: dict[str, Any]) -> None:
        self.documents.write(self.path, text.encode("utf-8"))
        signature = self.documents.version(self.path)  # the lock held: none changed it since
        self._known = None if signature is None else (signature, document)

    def read(self) -> dict[str, Any]:
        """The document (blocking); an empty one when there is none or it cannot be read."""
        try:
            signature = self.documents.version(self.path)
        except OSError:
            signature = None
        if self._known is not None and self._known[0] == signature:
            return self._known[1]
        document = self._parse()
        if signature is not None:
            self._known = (signature, document)
        return document

    def _parse(self) -> dict[str, Any]:
        empty: dict[str, Any] = {"version": VERSION, "days": {}}
        try:
            data = self.documents.read(self.path)
            if data is None:
                return empty
            document = json.loads(data.decode("utf-8"))
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


def _added(
    document: dict[str, Any], today: date, chat: str, kind: str, model: str, usage: Usage
) -> dict[str, Any]:
    """A new document: `document` (left as it is, a reader may hold it) with `usage` added and
    the days no longer kept dropped; only the dicts on the changed path are copied."""
    days = {day: v for day, v in document["days"].items() if _kept(day, today)}
    day = days[today.isoformat()] = dict(_dict(days.get(today.isoformat())))
    chats = day[chat] = dict(_dict(day.get(chat)))
    models = chats[kind] = dict(_dict(chats.get(kind)))
    was = _dict(models.get(model))
    models[model] = {
        "in": _int(was.get("in")) + usage.prompt_tokens,
        "out": _int(was.get("out")) + usage.completion_tokens,
        "cached": _int(was.get("cached")) + usage.cached_tokens,
        "calls": _int(was.get("calls")) + 1,
    }
    return {"version": VERSION, "days": days}


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


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
