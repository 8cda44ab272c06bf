"""Long-term memory: `MEMORY.md`, hand-editable, read fresh every turn, never clobbered.

Every change is a locked read-modify-write. An LLM rewrite (consolidation) is applied only if the
file is unchanged since it was read (`replace_if_unchanged`); appends (tags, /remember) re-read
under the lock, so a hand edit made a moment before is kept, and facts that go at the end are
written with one O_APPEND write, so a line a person appends meanwhile is kept too. A file that
is not UTF-8 text (binary, Latin-1, a NUL byte) is never rewritten: changes raise
`NotTextError` with what to do. A file with CRLF line endings keeps them (`_write`).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.errors import NotTextError
from bot.models import MemoryScope
from bot.storage.files import FileLocks, append_text, atomic_write_text, read_text
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class MemoryText:
    text: str
    digest: str  # sha256 of the file's bytes as read ("" when the file is missing)


def digest_of(text: str | None) -> str:
    return "" if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


class LongTermMemory:
    def __init__(self, workspace: Workspace, locks: FileLocks) -> None:
        self.workspace = workspace
        self.locks = locks

    def snapshot(self, scope: MemoryScope) -> MemoryText:
        path = self.workspace.long_term_path(scope)
        raw = None if self.workspace.strays(path) else read_text(path)
        return MemoryText(text=raw or "", digest=digest_of(raw))

    def _path(self, scope: MemoryScope) -> Path:
        """The scope's MEMORY.md to change; `NotTextError` when it is a link out of the scope's
        folder (`Workspace.strays`): such a file is never written."""
        path = self.workspace.long_term_path(scope)
        if self.workspace.strays(path):
            log.warning("memory_file_outside_its_scope", path=str(path))
            raise NotTextError(f"{path.name} is a link out of this chat's memory; left alone")
        return path

    async def replace_if_unchanged(self, scope: MemoryScope, expected: str, new_text: str) -> bool:
        """Write `new_text` only if the file still has digest `expected`; False if it changed."""
        path = self._path(scope)
        async with self.locks.hold(path):
            current = await asyncio.to_thread(_text_to_change, path)
            if digest_of(current) != expected:
                log.info("memory_changed_underneath", path=str(path))
                return False
            await asyncio.to_thread(_write, path, _with_newline(new_text), current)
            return True

    async def append_facts(
        self, scope: MemoryScope, facts: Sequence[str], *, section: str | None = None
    ) -> list[str]:
        """Append facts as `- fact` lines (under `## section` if given), skipping any already
        present (case-insensitive). Returns the facts actually added."""
        path = self._path(scope)
        async with self.locks.hold(path):
            current = await asyncio.to_thread(_text_to_change, path) or ""
            added = _new_facts(current, facts)
            if added:
                updated = _insert(current, [f"- {fact}" for fact in added], section)
                if updated.startswith(current):  # only added at the end: append, never replace
                    tail = _endings_like(updated[len(current) :], current)
                    await asyncio.to_thread(append_text, path, tail)
                else:
                    await asyncio.to_thread(_write, path, updated, current)
            return added

    async def remove_lines(self, scope: MemoryScope, needle: str) -> list[str]:
        """Remove every line containing `needle` (case-insensitive); returns the removed lines."""
        path = self._path(scope)
        async with self.locks.hold(path):
            current = await asyncio.to_thread(_text_to_change, path)
            if not current:
                return []
            kept, removed = split_matching(current, needle)
            if removed:
                await asyncio.to_thread(_write, path, kept, current)
            return removed

    async def replace_line(self, scope: MemoryScope, old: str, new: str) -> LineEdit:
        """Replace the one line holding `old` (case-insensitive) with `new`, or delete it when
        `new` is blank; nothing changes unless exactly one line matches. `NotTextError` when
        the file is not text."""
        path = self._path(scope)
        async with self.locks.hold(path):
            current = await asyncio.to_thread(_text_to_change, path) or ""
            lines = current.splitlines(keepends=True)
            found = [i for i, line in enumerate(lines) if old.casefold() in line.casefold()]
            if len(found) != 1:
                return LineEdit(before=None, after=None, matches=tuple(lines[i] for i in found))
            at = found[0]
            before = lines[at].rstrip("\r\n")
            after = _keeping_shape(before, new) if new.strip() else None
            lines[at] = "" if after is None else after + _ending(lines[at])
            await asyncio.to_thread(_write, path, "".join(lines), current)
            return LineEdit(before=before, after=after, matches=(before,))


@dataclass(frozen=True)
class LineEdit:
    before: str | None  # the line changed, None when nothing was (no match, or several)
    after: str | None  # its new text, None when it was deleted (or nothing changed)
    matches: tuple[str, ...]  # the lines that held the text


def _keeping_shape(line: str, new: str) -> str:
    """`new` written as the line was: its indent and list bullet kept unless `new` has one."""
    stripped = new.strip()
    indent = line[: len(line) - len(line.lstrip())]
    bullet = next((b for b in ("- ", "* ", "+ ") if line.lstrip().startswith(b)), "")
    if stripped.startswith(("- ", "* ", "+ ", "#")):
        bullet = ""
    return f"{indent}{bullet}{stripped}"


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _text_to_change(path: Path) -> str | None:
    """The file's text before a change (None if missing); `NotTextError` unless it is UTF-8
    text without NUL bytes (rewriting anything else would garble it)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        log.warning("memory_file_not_utf8_text", path=str(path))
        raise NotTextError(
            f"{path.name} is not UTF-8 text, so I left it as it is; save it as UTF-8 (without "
            "NUL characters) to let me change it"
        )
    return text


def _write(path: Path, text: str, like: str | None) -> None:
    atomic_write_text(path, _endings_like(text, like))


def _endings_like(text: str, like: str | None) -> str:
    """`text` with CRLF line endings when the file had them (`like`: its text before)."""
    if not like or "\r\n" not in like:
        return text
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def split_matching(text: str, needle: str) -> tuple[str, list[str]]:
    """(text without the lines containing `needle`, those lines) — case-insensitive."""
    lowered = needle.lower()
    kept: list[str] = []
    removed: list[str] = []
    for line in text.splitlines(keepends=True):
        (removed if lowered in line.lower() else kept).append(line)
    return "".join(kept), [line.rstrip("\n") for line in removed]


def _new_facts(current: str, facts: Sequence[str]) -> list[str]:
    seen = current.lower()
    added: list[str] = []
    for fact in (" ".join(f.split()) for f in facts):
        if fact and fact.lower() not in seen:
            added.append(fact)
            seen += "\n" + fact.lower()
    return added


def _insert(current: str, lines: list[str], section: str | None) -> str:
    block = "\n".join(lines)
    if section is None:
        return _with_newline(current) + block + "\n" if current.strip() else block + "\n"
    heading = f"## {section}"
    existing = current.splitlines()
    if heading not in existing:
        prefix = _with_newline(current) + "\n" if current.strip() else ""
        return f"{prefix}{heading}\n{block}\n"
    at = existing.index(heading) + 1
    while at < len(existing) and not existing[at].startswith("## "):
        at += 1
    while at > 0 and not existing[at - 1].strip():
        at -= 1
    return "\n".join([*existing[:at], *lines, *existing[at:]]) + "\n"


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def new_lines(update: str, *, seen: str, current: str) -> list[str]:
    """Lines the model added: in `update` but neither in what it saw nor in the file now (so a
    fact deleted by hand meanwhile is not brought back). Headings and bullets are dropped."""
    known = {bare_line(line) for line in (seen + "\n" + current).splitlines()}
    found: list[str] = []
    for line in update.splitlines():
        fact = bare_line(line)
        if fact and not fact.startswith("#") and fact not in known and fact not in found:
            found.append(fact)
    return found


def bare_line(line: str) -> str:
    stripped = line.strip()
    for bullet in ("- ", "* ", "+ "):
        if stripped.startswith(bullet):
            return stripped[len(bullet) :].strip()
    return stripped
