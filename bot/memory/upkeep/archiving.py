"""Archiving old notes: daily notes past `retention_days` move to the
scope's `archive/` folder — out of the prompt's recent days, still searchable, never deleted.

A background service: at start-up and then once a day, for the global scope and every chat's
scope. Nothing is folded into MEMORY.md: only curated facts enter it (tags, /remember,
consolidation), and consolidation keeps it near its size. The work is one rename per note past
retention, listed once; a second run finds nothing to do. A note that is not text stays where
it is, untouched, with a warning; a name already taken in the archive gets a numbered twin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Protocol

import structlog

from bot.memory.upkeep.schedule import DAILY, DailyOverScopes
from bot.models import MemoryScope
from bot.storage.files import Documents, Locks
from bot.storage.lines import safe_to_rewrite
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)


class NoteArchiver(Protocol):
    """Who moves the notes (`MemoryWriter.archive_notes`, so that the index follows)."""

    async def archive_notes(self, scope: MemoryScope, *, before: date) -> int: ...


class NoteArchive(DailyOverScopes):
    def __init__(
        self,
        memory: NoteArchiver,
        workspace: Workspace,
        *,
        retention_days: int,
        now: Callable[[], datetime],
        every: timedelta = DAILY,
    ) -> None:
        super().__init__("note_archive", self._archive_scope, workspace, every=every)
        self.memory = memory
        self.retention_days = retention_days
        self.now = now

    async def _archive_scope(self, scope: MemoryScope) -> int:
        cutoff = self.now().date() - timedelta(days=self.retention_days)
        return await self.memory.archive_notes(scope, before=cutoff)


async def archive_notes(
    workspace: Workspace, locks: Locks, scope: MemoryScope, *, before: date
) -> int:
    """Move the scope's notes of days before `before` into its archive; how many moved."""
    notes = await asyncio.to_thread(workspace.daily_note_paths, scope)
    old = [path for path in notes if date.fromisoformat(path.stem) < before]
    if not old:
        return 0
    archive = workspace.archive_note_dir(scope)
    if not workspace.inside_scope(archive):  # notes never move out of their scope
        return 0
    async with locks.hold(archive):  # /forget rewrites notes under the same lock
        return await asyncio.to_thread(_move_all, workspace.documents, old, archive)


def _move_all(documents: Documents, notes: Sequence[Path], archive: Path) -> int:
    taken = {path.name for path in documents.listing(archive, "*")}
    moved = 0
    for note in notes:
        if not safe_to_rewrite(note, documents):
            log.warning("note_archive_skipped", path=str(note), reason="not_text")
            continue
        target = _free_name(archive, note, taken)
        documents.move(note, target)
        taken.add(target.name)
        moved += 1
    return moved


def _free_name(folder: Path, note: Path, taken: set[str]) -> Path:
    """`folder/<note name>`, or `<stem>.1.md`, `.2` … when taken: never over a file."""
    name, n = note.name, 1
    while name in taken:
        name, n = f"{note.stem}.{n}{note.suffix}", n + 1
    return folder / name
