"""The consolidation history: `HISTORY.md` plus its monthly `HISTORY-YYYY-MM.md`, append-only.

Each entry is headed by its ISO timestamp (seed 003) and written to both files: the main file
for all time, the monthly one so that grep stays fast. Nothing is ever rewritten. An entry that
starts with `[checkpoint]` marks a compaction (its messages are in a session archive file);
every other entry is a consolidation (a `[raw-fallback]` one included).
"""

from __future__ import annotations

import asyncio
import os
from datetime import datetime
from pathlib import Path

from bot.models import MemoryScope
from bot.storage.files import FileLocks, append_text
from bot.storage.workspace import Workspace

HEADING = "## "
CHECKPOINT = "[checkpoint]"
TAIL_BYTES = 64 * 1024  # enough to hold the last entry; the whole file is read only if not


def format_entry(entry: str, at: datetime) -> str:
    return f"{HEADING}{at.isoformat(timespec='seconds')}\n{entry.strip()}\n\n"


class HistoryLog:
    def __init__(self, workspace: Workspace, locks: FileLocks) -> None:
        self.workspace = workspace
        self.locks = locks

    async def append(self, scope: MemoryScope, entry: str, at: datetime) -> None:
        """Append one entry to the scope's `HISTORY.md` and to the month's file."""
        main = self.workspace.history_path(scope)
        monthly = self.workspace.monthly_history_path(scope, at.date())
        text = format_entry(entry, at)
        async with self.locks.hold(main):
            await asyncio.to_thread(append_text, main, text)
            await asyncio.to_thread(append_text, monthly, text)

    def last_consolidation(self, scope: MemoryScope) -> datetime | None:
        """When the last consolidation entry was written, or None if never."""
        return self._last(scope, checkpoint=False)

    def last_compaction(self, scope: MemoryScope) -> datetime | None:
        """When the last compaction checkpoint was written, or None if never."""
        return self._last(scope, checkpoint=True)

    def _last(self, scope: MemoryScope, *, checkpoint: bool) -> datetime | None:
        path = self.workspace.history_path(scope)
        try:
            size = path.stat().st_size
            found = _last_time(_read_from(path, max(0, size - TAIL_BYTES)), checkpoint)
            if found is None and size > TAIL_BYTES:
                found = _last_time(_read_from(path, 0), checkpoint)
        except OSError:
            return None
        return found


def _read_from(path: Path, offset: int) -> str:
    with path.open("rb") as handle:
        handle.seek(offset, os.SEEK_SET)
        return handle.read().decode("utf-8", errors="replace")


def _last_time(text: str, checkpoint: bool) -> datetime | None:
    """The time of the last entry of the kind asked for (a heading, then the entry's text)."""
    lines = text.splitlines()
    for at in range(len(lines) - 1, -1, -1):
        if not lines[at].startswith(HEADING):
            continue
        try:
            moment = datetime.fromisoformat(lines[at][len(HEADING) :].strip())
        except ValueError:
            continue
        first = lines[at + 1] if at + 1 < len(lines) else ""
        if first.startswith(CHECKPOINT) == checkpoint:
            return moment
    return None
