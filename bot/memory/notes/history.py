"""The consolidation history: `HISTORY.md` plus its monthly `HISTORY-YYYY-MM.md`, append-only.

Each entry is headed by its ISO timestamp and written to both files: the main file
for all time, the monthly one so that grep stays fast. Nothing is ever rewritten. An entry that
starts with `[checkpoint]` marks a compaction (its messages are in a session archive file);
every other entry is a consolidation (a `[raw-fallback]` one included). A file that leads out
of its scope's folder gets no entry (`bot.storage.confined`).

A consolidation's entry carries its key in the heading, as an HTML comment a reader does not
see (`## 2026-11-24T10:00:00+00:00 <!-- consolidation 1a2b3c.0 -->`): appending it again — a
job run again after a crash — adds it only to a file that lacks it, so each file holds it once
and the main and monthly files agree.
"""

from __future__ import annotations

import asyncio
import os
from datetime import datetime
from pathlib import Path

from bot.models import MemoryScope
from bot.storage.files import Documents, Locks
from bot.storage.lines import without_controls
from bot.storage.workspace import Workspace

HEADING = "## "
CHECKPOINT = "[checkpoint]"
TAIL_BYTES = 64 * 1024  # enough to hold the last entry; the whole file is read only if not
KEY_TAIL_BYTES = 1024 * 1024  # where an entry appended again after a crash is looked for


def checkpoint_entry(count: int, *, reason: str, where: str) -> str:
    """The history entry written before a compaction: how many messages, why, and the session
    archive file that keeps them verbatim (tool calls and results included)."""
    return f"{CHECKPOINT} {count} messages before compaction ({reason}), verbatim in {where}"


def format_entry(entry: str, at: datetime, key: str | None = None) -> str:
    mark = f" {_mark(key)}" if key else ""
    text = without_controls(entry).strip()
    return f"{HEADING}{at.isoformat(timespec='seconds')}{mark}\n{text}\n\n"


def heading_time(line: str) -> datetime | None:
    """The time of an entry's heading line; None when the line is not one."""
    if not line.startswith(HEADING):
        return None
    try:
        return datetime.fromisoformat(line[len(HEADING) :].split("<!--", 1)[0].strip())
    except ValueError:
        return None


def _mark(key: str) -> str:
    return f"<!-- {key} -->"


class HistoryLog:
    def __init__(self, workspace: Workspace, locks: Locks) -> None:
        self.workspace = workspace
        self.documents = workspace.documents  # the files, or shared by the replicas
        self.locks = locks

    async def append(
        self, scope: MemoryScope, entry: str, at: datetime, *, key: str | None = None
    ) -> None:
        """Append one entry to the scope's `HISTORY.md` and to the month's file; with a `key`,
        only to a file that does not hold it yet."""
        main = self.workspace.history_path(scope)
        monthly = self.workspace.monthly_history_path(scope, at.date())
        text = format_entry(entry, at, key)
        async with self.locks.hold(main):
            for path in (main, monthly):
                if not self.workspace.inside_scope(path):
                    continue
                held = key is not None and await asyncio.to_thread(
                    _holds, self.documents, path, key
                )
                if not held:
                    await asyncio.to_thread(self.documents.append, path, text.encode("utf-8"))

    async def entry(self, scope: MemoryScope, key: str) -> str | None:
        """The text of the entry of this key in the scope's `HISTORY.md`; None if it has none."""
        path = self.workspace.history_path(scope)
        if not self.workspace.inside_scope(path):
            return None
        return await asyncio.to_thread(_entry, self.documents, path, key)

    def last_consolidation(self, scope: MemoryScope) -> datetime | None:
        """When the last consolidation entry was written, or None if never."""
        return self._last(scope, checkpoint=False)

    def last_compaction(self, scope: MemoryScope) -> datetime | None:
        """When the last compaction checkpoint was written, or None if never."""
        return self._last(scope, checkpoint=True)

    def _last(self, scope: MemoryScope, *, checkpoint: bool) -> datetime | None:
        path = self.workspace.history_path(scope)
        if not self.workspace.inside_scope(path):
            return None
        documents = self.documents
        try:
            size = _size(documents, path)
            found = _last_time(_read_from(documents, path, max(0, size - TAIL_BYTES)), checkpoint)
            if found is None and size > TAIL_BYTES:
                found = _last_time(_read_from(documents, path, 0), checkpoint)
        except OSError:
            return None
        return found


def _holds(documents: Documents, path: Path, key: str) -> bool:
    return _entry(documents, path, key) is not None


def _entry(documents: Documents, path: Path, key: str) -> str | None:
    try:
        size = _size(documents, path)
    except OSError:
        return None
    lines = _read_from(documents, path, max(0, size - KEY_TAIL_BYTES)).splitlines()
    mark = _mark(key)
    start = next(
        (n for n, line in enumerate(lines) if line.startswith(HEADING) and mark in line), None
    )
    if start is None:
        return None
    end = next((n for n in range(start + 1, len(lines)) if heading_time(lines[n])), len(lines))
    return "\n".join(lines[start + 1 : end]).strip()


def _size(documents: Documents, path: Path) -> int:
    version = documents.version(path)
    if version is None:
        raise FileNotFoundError(str(path))
    return version[1]


def _read_from(documents: Documents, path: Path, offset: int) -> str:
    with documents.open(path) as handle:
        handle.seek(offset, os.SEEK_SET)
        return handle.read().decode("utf-8", errors="replace")


def _last_time(text: str, checkpoint: bool) -> datetime | None:
    """The time of the last entry of the kind asked for (a heading, then the entry's text)."""
    lines = text.splitlines()
    for at in range(len(lines) - 1, -1, -1):
        moment = heading_time(lines[at])
        if moment is None:
            continue
        first = lines[at + 1] if at + 1 < len(lines) else ""
        if first.startswith(CHECKPOINT) == checkpoint:
            return moment
    return None
