"""Edits a person makes by command: /remember adds a fact, /forget removes lines.

Both act only on the scopes the chat may see (a group's own folder, never the global one).
/forget removes every line containing the text (case-insensitive) from MEMORY.md, the daily
notes (archived ones too), the HISTORY files and the chat's working memory, each a locked atomic
rewrite that keeps every other byte. A file that is not text is never rewritten: it is reported
as skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.errors import NotTextError
from bot.memory.notes.long_term import LongTermMemory, split_matching
from bot.memory.scopes import visible_scopes
from bot.models import MemoryScope
from bot.storage.files import FileLocks, atomic_write_bytes
from bot.storage.lines import decode_text
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)

REMEMBERED_SECTION = "Remembered"


@dataclass(frozen=True)
class Removed:
    file: str  # from the chat's own memory folder ("MEMORY.md", "archive/…"), else from memory/
    line: str


@dataclass(frozen=True)
class Forgotten:
    removed: tuple[Removed, ...]
    skipped: tuple[str, ...]  # files left alone because they are not text


class MemoryEdits:
    def __init__(self, workspace: Workspace, long_term: LongTermMemory, locks: FileLocks) -> None:
        self.workspace = workspace
        self.long_term = long_term
        self.locks = locks

    async def remember(self, scope: MemoryScope, fact: str) -> str | None:
        """Add `fact` under `## Remembered`: the fact as saved, or None when it was there.

        Raises `NotTextError` when MEMORY.md is not text (it is left as it is)."""
        added = await self.long_term.append_facts(scope, [fact], section=REMEMBERED_SECTION)
        return added[0] if added else None

    async def forget(self, scope: MemoryScope, session_key: str, needle: str) -> Forgotten:
        """Remove the lines containing `needle` from every memory file this chat sees."""
        done: list[tuple[Path, list[str]]] = []
        skipped: list[Path] = []
        for each in visible_scopes(scope, session_key):
            done += await self._forget_in(each, needle, skipped)
        working = self.workspace.working_memory_path(session_key)
        if await asyncio.to_thread(working.exists):
            done += await self._rewrite_all(working, [working], needle, skipped)
        home = self.workspace.memory_dir(scope)
        removed = tuple(Removed(self._name(p, home), line) for p, lines in done for line in lines)
        log.info("memory_forget", removed=len(removed), skipped=len(skipped))
        return Forgotten(removed=removed, skipped=tuple(self._name(p, home) for p in skipped))

    async def _forget_in(
        self, scope: MemoryScope, needle: str, skipped: list[Path]
    ) -> list[tuple[Path, list[str]]]:
        """One scope's files, each group under the lock its other writers hold."""
        done: list[tuple[Path, list[str]]] = []
        memory = self.workspace.long_term_path(scope)
        try:
            done.append((memory, await self.long_term.remove_lines(scope, needle)))
        except (NotTextError, OSError):  # not text, or unreadable: left exactly as it is
            skipped.append(memory)
        notes, history = await asyncio.to_thread(self._files, scope)
        archive = self.workspace.archive_note_dir(scope)  # log compaction's lock
        done += await self._rewrite_all(archive, notes, needle, skipped)
        done += await self._rewrite_all(
            self.workspace.history_path(scope), history, needle, skipped
        )
        return done

    def _name(self, path: Path, home: Path) -> str:
        """The path from the chat's own folder, or else from the memory folder."""
        base = home if path.is_relative_to(home) else self.workspace.memory_root
        return str(path.relative_to(base))

    def _files(self, scope: MemoryScope) -> tuple[list[Path], list[Path]]:
        """(daily notes, archived ones included; HISTORY.md and its monthly files)."""
        folder = self.workspace.memory_dir(scope)
        archive = self.workspace.archive_note_dir(scope)
        notes = [*self.workspace.daily_note_paths(scope), *sorted(archive.glob("*.md"))]
        return notes, sorted(folder.glob("HISTORY*.md"))

    async def _rewrite_all(
        self, lock: Path, paths: Sequence[Path], needle: str, skipped: list[Path]
    ) -> list[tuple[Path, list[str]]]:
        if not paths:
            return []
        done = []
        async with self.locks.hold(lock):
            for path in paths:
                try:
                    done.append(
                        (path, await asyncio.to_thread(remove_matching_lines, path, needle))
                    )
                except NotTextError:
                    skipped.append(path)
        return done


def remove_matching_lines(path: Path, needle: str) -> list[str]:
    """Rewrite `path` without the lines containing `needle`; every other byte is kept.
    The caller holds the file's lock. Raises `NotTextError` for a file that is not text."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    if needle.lower() not in data.decode("utf-8", errors="replace").lower():
        return []
    if decode_text(data) is None:
        raise NotTextError(path.name)
    kept, removed = split_matching(data.decode("utf-8", errors="surrogateescape"), needle)
    atomic_write_bytes(path, kept.encode("utf-8", errors="surrogateescape"))
    return [_printable(line) for line in removed]


def _printable(line: str) -> str:
    return line.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
