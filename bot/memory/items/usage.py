"""Last-used marks: when a prompt last showed each item, kept in memory and written in batches.

Marking the items a prompt showed (`ItemStore.touch`, every turn) must not rewrite their JSONL
files every turn. A mark waits in `UsageMarks` (the latest time per item id) and every read
through the store sees it at once (`applied`). It reaches the disk with the next rewrite of its
file by the store, whatever the reason (a reinforce, an update, forgetting an item, decay),
which writes the items as read, marks included: a rewrite never drops a mark. `UsageSaver` (a
service of the app) rewrites the files that still have marks waiting every `SAVE_EVERY` and
when the app stops; the store saves them at once when more than its `max_marks` wait. A file
changed outside the store (`/forget`, `/undo`, a hand edit) is read again and its marks applied
to what it holds now; a mark whose item is gone is dropped, never written.

A crash loses the marks made since the last save, `SAVE_EVERY` at most. That is accepted:
only decay reads them, and a lost mark only lets its item decay sooner (as if it had not been
shown in those minutes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

import structlog

from bot.background import OwnedTask, periodically
from bot.memory.items.cache import ItemFile
from bot.models import MemoryLayer, MemoryScope

log = structlog.get_logger(__name__)
SAVE_EVERY = timedelta(minutes=10)
MAX_PENDING = 10_000  # marks an `ItemStore` holds in memory at most, by default


@dataclass(frozen=True)
class Pending:
    """A file that holds marks not written yet, and the lock its writers take."""

    path: Path
    scope: MemoryScope
    layer: MemoryLayer


@dataclass
class _Marks:
    where: Pending
    times: dict[str, datetime] = field(default_factory=dict)  # item id -> last shown


class UsageMarks:
    """The marks not written yet, by file (not thread-safe: its owner holds a lock)."""

    def __init__(self) -> None:
        self._marks: dict[Path, _Marks] = {}
        self.count = 0  # marks waiting, in all files
        self.version = 0  # counts the marks made: a file read meanwhile needs them all

    def add(
        self, where: Pending, ids: Iterable[str], at: datetime, *, known: ItemFile | None
    ) -> int:
        """The items `ids` of the file were shown at `at`: those not marked later already (by
        a mark waiting, or in the file as `known`, when it is); how many marks were new."""
        times = self._marks.setdefault(where.path, _Marks(where)).times
        fresh = [i for i in ids if _older(_used(known, i), at) and _older(times.get(i), at)]
        for item_id in fresh:
            self.count += item_id not in times
            times[item_id] = at
        if not times:
            del self._marks[where.path]
        self.version += 1
        return len(fresh)

    def waiting(self, file: ItemFile) -> bool:
        """Whether marks wait to be written for items `file` holds (the marks of items it
        no longer holds are dropped)."""
        marks = self._marks.get(file.path)
        if marks is None:
            return False
        if any(file.find(item_id) for item_id in marks.times):
            return True
        self.count -= len(marks.times)
        del self._marks[file.path]
        return False

    def pending(self) -> list[Pending]:
        return [marks.where for marks in self._marks.values()]

    def applied(self, file: ItemFile, only: Iterable[str] | None = None) -> ItemFile:
        """`file` with the marks of its items, or of those `only` names (the same file when it
        holds them already)."""
        marks = self._marks.get(file.path)
        if marks is None:
            return file
        times = marks.times
        ids = times if only is None else (item_id for item_id in only if item_id in times)
        changes = {
            item_id: replace(item, last_used_at=times[item_id])
            for item_id in ids
            if (item := file.find(item_id)) and _older(item.last_used_at, times[item_id])
        }
        return file.with_items(changes) if changes else file

    def written(self, file: ItemFile) -> None:
        """`file` is on disk now: drop the marks it holds, and those of items it lost."""
        marks = self._marks.get(file.path)
        if marks is None:
            return
        for item_id, at in list(marks.times.items()):
            item = file.find(item_id)
            if item is None or not _older(item.last_used_at, at):
                del marks.times[item_id]
                self.count -= 1
        if not marks.times:
            del self._marks[file.path]


def _older(used: datetime | None, than: datetime) -> bool:
    return used is None or used < than


def _used(file: ItemFile | None, item_id: str) -> datetime | None:
    item = file.find(item_id) if file is not None else None
    return item.last_used_at if item is not None else None


class MarkSaving(Protocol):
    async def save_marks(self) -> int: ...


class UsageSaver:
    """The service that writes the marks: every `every` in an owned task, and at stop."""

    def __init__(self, store: MarkSaving, *, every: timedelta = SAVE_EVERY) -> None:
        self.store = store
        self.every = every
        self._task = OwnedTask("usage_save")

    async def start(self) -> None:
        self._task.start(periodically(self.every.total_seconds(), self.run))

    async def stop(self) -> None:
        """Stop the task, then write what waits (failures are logged: the app still stops)."""
        await self._task.stop()
        await self.run()

    async def run(self) -> int:
        try:
            return await self.store.save_marks()
        except Exception:  # the background boundary: the marks wait for the next try
            log.warning("usage_save_failed", exc_info=True)
            return 0
