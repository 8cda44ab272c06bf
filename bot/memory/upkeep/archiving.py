"""Log compaction (seed 002): daily notes past the retention period, folded into MEMORY.md.

A background service. At start-up and then once a day, for the global scope and every chat's
scope, each daily note older than `retention_days` has its lines appended to that scope's
MEMORY.md under `## Compacted memories` as `- YYYY-MM-DD text` (the `[HH:mm] ` prefix dropped;
entries already there, case-insensitively, are skipped), and is then moved into the scope's
`archive/` folder: out of the prompt, never deleted. A second run finds nothing to do.

A note or a MEMORY.md that is not text is left where it is, untouched, with a warning.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path

import structlog

from bot.memory.notes.long_term import LongTermMemory
from bot.memory.upkeep.schedule import DAILY, DailyOverScopes
from bot.models import MemoryScope
from bot.storage.files import FileLocks, ensure_dir
from bot.storage.lines import decode_text, safe_to_rewrite
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)

SECTION = "Compacted memories"
_CLOCK = re.compile(r"^\[\d{1,2}:\d{2}\]\s*")


def compacted_facts(day: date, text: str) -> list[str]:
    """`[14:15] User: … | Assistant: …` → `2026-02-07 User: … | Assistant: …`, one per line."""
    return [
        f"{day.isoformat()} {_CLOCK.sub('', line.strip())}"
        for line in text.splitlines()
        if line.strip()
    ]


class NoteArchive(DailyOverScopes):
    def __init__(
        self,
        workspace: Workspace,
        long_term: LongTermMemory,
        locks: FileLocks,
        *,
        retention_days: int,
        now: Callable[[], datetime],
        every: timedelta = DAILY,
    ) -> None:
        super().__init__("log_compaction", self._compact_scope, workspace, every=every)
        self.long_term = long_term
        self.locks = locks
        self.retention_days = retention_days
        self.now = now

    async def _compact_scope(self, scope: MemoryScope) -> int:
        """Fold and archive the scope's notes older than the retention period."""
        cutoff = self.now().date() - timedelta(days=self.retention_days)
        return await self._compact(scope, cutoff)

    async def _compact(self, scope: MemoryScope, cutoff: date) -> int:
        notes = await asyncio.to_thread(self.workspace.daily_note_paths, scope)
        old = [path for path in notes if date.fromisoformat(path.stem) < cutoff]
        if not old:
            return 0
        memory = self.workspace.long_term_path(scope)
        if not await asyncio.to_thread(safe_to_rewrite, memory):
            log.warning("log_compaction_skipped", path=str(memory), reason="memory_not_text")
            return 0
        archive = self.workspace.archive_note_dir(scope)
        archived = 0
        async with self.locks.hold(archive):  # /forget rewrites notes under the same lock
            for note in old:
                archived += await self._fold(scope, note, archive)
        return archived

    async def _fold(self, scope: MemoryScope, note: Path, archive: Path) -> bool:
        """Fold one note into MEMORY.md, then move it into the archive."""
        try:
            data = await asyncio.to_thread(note.read_bytes)
        except OSError as exc:
            log.warning("log_compaction_skipped", path=str(note), reason=type(exc).__name__)
            return False
        text = decode_text(data)
        if text is None:
            log.warning("log_compaction_skipped", path=str(note), reason="note_not_text")
            return False
        facts = compacted_facts(date.fromisoformat(note.stem), text)
        if facts:
            await self.long_term.append_facts(scope, facts, section=SECTION)
        await asyncio.to_thread(_move_into, note, archive)
        return True


def _move_into(path: Path, folder: Path) -> None:
    """Move `path` into `folder`, never over a file already there."""
    ensure_dir(folder)
    target, n = folder / path.name, 1
    while target.exists():
        target, n = folder / f"{path.stem}.{n}{path.suffix}", n + 1
    path.replace(target)
