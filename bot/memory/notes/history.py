"""The consolidation history: `HISTORY.md` plus its monthly `HISTORY-YYYY-MM.md`, append-only.

Each entry is headed by its ISO timestamp (seed 003) and written to both files: the main file
for all time, the monthly one so that grep stays fast. Nothing is ever rewritten.
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

    def last_entry_time(self, scope: MemoryScope) -> datetime | None:
        """When the last entry was written (the last consolidation), or None if never."""
        path = self.workspace.history_path(scope)
        try:
            size = path.stat().st_size
            found = _last_heading_time(_read_from(path, max(0, size - TAIL_BYTES)))
            if found is None and size > TAIL_BYTES:
                found = _last_heading_time(_read_from(path, 0))
        except OSError:
            return None
        return found


def _read_from(path: Path, offset: int) -> str:
    with path.open("rb") as handle:
        handle.seek(offset, os.SEEK_SET)
        return handle.read().decode("utf-8", errors="replace")


def _last_heading_time(text: str) -> datetime | None:
    for line in reversed(text.splitlines()):
        if not line.startswith(HEADING):
            continue
        try:
            return datetime.fromisoformat(line[len(HEADING) :].strip())
        except ValueError:
            continue
    return None
