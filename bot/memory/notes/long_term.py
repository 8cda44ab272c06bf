"""Long-term memory: `MEMORY.md`, hand-editable, read fresh every turn, never clobbered.

Every change holds the file's lock. An LLM rewrite (consolidation) is applied only if the file
is unchanged since it was read (`replace_if_unchanged`); a correction (`replace_line`) re-reads
under the lock. New facts (tags, /remember, consolidation's merges) are one `O_APPEND` write at
the end of the file, never a rewrite: a line a person appends at the same moment is never lost.
The facts go under `## section` when that is the file's last heading, else under a new one.
The race left is small and loses nothing: a person's heading appended between the bot's read
(to skip facts already there and find the last heading) and its append would hold the facts.

What may be changed and how it is written back is `bot.storage.textfile`'s rule: UTF-8 only (a
file in another encoding, or not text, raises `NotTextError` saying why), its line endings kept,
and never a file that leads out of its scope (`OutOfScopeError`). A symlinked MEMORY.md is
written through to its target (`bot.storage.files`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import structlog

from bot.memory.lines import bare, bullet_of, fact_of, is_marked, marked, normal, unmarked, until_of
from bot.memory.notes.merge import Merged, merge
from bot.memory.notes.supersede import current_lines, mark_replaced, superseded_by
from bot.memory.provenance import FactOrigins
from bot.models import MemoryScope, Provenance, StoredLine
from bot.storage.files import Locks
from bot.storage.lines import without_controls
from bot.storage.textfile import TextFile, lines_of, text_to_change, text_to_show
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class MemoryText:
    text: str  # "\n" line endings
    digest: str  # sha256 of the file's bytes as read ("" when the file is missing)


class LongTermMemory:
    def __init__(self, workspace: Workspace, locks: Locks) -> None:
        self.workspace = workspace
        self.documents = workspace.documents  # the files, or shared by the replicas
        self.locks = locks

    def snapshot(self, scope: MemoryScope) -> MemoryText:
        """The file as it is now ("" when missing or out of its scope)."""
        path, root = self.workspace.long_term_path(scope), self.workspace.memory_root
        shown = text_to_show(path, root, self.documents)
        return MemoryText(text=shown.text, digest=shown.digest)

    async def replace_if_unchanged(self, scope: MemoryScope, expected: str, new_text: str) -> bool:
        """Write `new_text` only if the file still has digest `expected`; False if it changed."""
        path = self.workspace.long_term_path(scope)
        async with self.locks.hold(path):
            current = await asyncio.to_thread(self._to_change, path)
            if current.digest != expected:
                log.info("memory_changed_underneath", path=str(path))
                return False
            data = current.encode(_ended(new_text))
            await asyncio.to_thread(self.documents.write, path, data)
            return True

    async def replace_merged(self, scope: MemoryScope, seen: MemoryText, text: str) -> Merged:
        """A person's whole-file edit (`text`, made of `seen`): written as it is while the file
        is still what they saw, else merged with what changed since (`merge`: both kept)."""
        path = self.workspace.long_term_path(scope)
        async with self.locks.hold(path):
            current = await asyncio.to_thread(self._to_change, path)
            same = current.digest == seen.digest
            done = Merged(text, ()) if same else merge(seen.text, current.text, text)
            data = current.encode(_ended(done.text))
            await asyncio.to_thread(self.documents.write, path, data)
            return done

    async def append_facts(
        self,
        scope: MemoryScope,
        facts: Sequence[str],
        *,
        section: str | None = None,
        origin: Provenance | None = None,
    ) -> Appended:
        """Append facts as `- fact` lines (under `## section` if given), skipping any already
        present (case-insensitive), and mark the lines they replace superseded (`supersede`);
        their provenance goes beside the file (`FactOrigins`)."""
        path = self.workspace.long_term_path(scope)
        async with self.locks.hold(path):
            return await asyncio.to_thread(self._append_facts, path, facts, section, origin)

    def _append_facts(
        self, path: Path, facts: Sequence[str], section: str | None, origin: Provenance | None
    ) -> Appended:
        current = self._to_change(path)
        added = _new_facts(current.text, facts)
        if not added:
            return Appended([], [])
        appended = _appended(current.text, [f"- {fact}" for fact in added], section)
        until = (origin.at if origin else datetime.now(UTC)).date()
        lines = current.text.split("\n")
        each = {fact: tuple(lines[i] for i in superseded_by(lines, [fact])) for fact in added}
        text, replaced = mark_replaced(current.text, added, until)
        if replaced:  # a rewrite, under the lock: the old lines get their mark
            self.documents.write(path, current.encode(text + appended))
        else:  # one append: a line a person appends meanwhile is never lost
            self.documents.append(path, current.encode(appended))
        if origin is not None:
            FactOrigins(path, self.documents).add(added, origin)
        return Appended(added, replaced, each)

    def origins(self, scope: MemoryScope) -> FactOrigins:
        """Where the provenance of the scope's MEMORY.md facts is kept."""
        return FactOrigins(self.workspace.long_term_path(scope), self.documents)

    async def replace_line(
        self, scope: MemoryScope, old: str, new: str, *, superseded_on: date | None = None
    ) -> LineEdit:
        """Replace the one line holding `old` (case-insensitive) with `new`, or delete it when
        `new` is blank; nothing changes unless exactly one line matches. With `superseded_on`
        the old line stays, marked superseded from that day, and `new` follows it.
        `NotTextError` when the file may not be changed."""
        path = self.workspace.long_term_path(scope)
        async with self.locks.hold(path):
            current = await asyncio.to_thread(self._to_change, path)
            lines = lines_of(current.text)
            found = [i for i, line in enumerate(lines) if old.casefold() in line.casefold()]
            if len(found) != 1:
                return LineEdit(before=None, after=None, matches=tuple(lines[i] for i in found))
            at = found[0]
            before = lines[at].rstrip("\n")
            after = _keeping_shape(before, new) if new.strip() else None
            end = lines[at][len(before) :]
            lines[at] = "" if after is None else after + end
            if after is not None and superseded_on is not None:
                lines[at] = marked(before, superseded_on) + (end or "\n") + lines[at]
            data = current.encode("".join(lines))
            await asyncio.to_thread(self.documents.write, path, data)
            return LineEdit(before=before, after=after, matches=(before,))

    async def restore_line(self, stored: StoredLine) -> LineEdit:
        """Undo one write (`StoredLine`): its line goes, the line it replaced back in its
        place, and the lines it marked superseded are current again, as they were — unless a
        newer fact has superseded its line since (then they stay history, and a replaced line
        comes back marked). Nothing changes unless exactly one line holds its fact.
        `NotTextError` when the file may not be changed."""
        path = self.workspace.long_term_path(stored.scope)
        async with self.locks.hold(path):
            current = await asyncio.to_thread(self._to_change, path)
            lines = lines_of(current.text)
            found = _holding(lines, stored.text)
            if len(found) != 1:
                return LineEdit(before=None, after=None, matches=tuple(lines[i] for i in found))
            at = found[0]
            before = lines[at].rstrip("\n")
            since = until_of(before)
            back = marked(stored.replaced, since) if stored.replaced and since else stored.replaced
            lines[at] = "" if back is None else back + (lines[at][len(before) :] or "\n")
            for old in stored.superseded if since is None else ():
                _unmark(lines, old)
            await asyncio.to_thread(self.documents.write, path, current.encode("".join(lines)))
            return LineEdit(before=before, after=back, matches=(before,))

    def _to_change(self, path: Path) -> TextFile:
        return text_to_change(path, self.workspace.memory_root, self.documents)


@dataclass(frozen=True)
class Appended:
    added: list[str]  # the facts appended (those not there yet)
    replaced: list[str]  # the lines they superseded, as they were
    superseded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # by each fact

    def stored(self, scope: MemoryScope) -> tuple[StoredLine, ...]:
        """Each fact's line, with what it superseded (its receipt's Undo puts that back)."""
        return tuple(StoredLine(scope, f, self.superseded.get(f, ())) for f in self.added)


@dataclass(frozen=True)
class LineEdit:
    before: str | None  # the line changed, None when nothing was (no match, or several)
    after: str | None  # its new text, None when it was deleted (or nothing changed)
    matches: tuple[str, ...]  # the lines that held the text


def _holding(lines: Sequence[str], fact: str) -> list[int]:
    """The lines whose fact is `fact` (current ones first), else those holding its text."""
    same = [i for i, line in enumerate(lines) if fact_of(line) and normal(line) == normal(fact)]
    current = [i for i in same if not is_marked(lines[i])]
    if same:
        return current or same
    return [i for i, line in enumerate(lines) if fact.casefold() in line.casefold()]


def _unmark(lines: list[str], old: str) -> None:
    """The marked line that was `old` made `old` again (none: left as it is)."""
    for at, line in enumerate(lines):
        body = line.rstrip("\n")
        if is_marked(body) and unmarked(body).rstrip() == old.rstrip():
            lines[at] = old + (line[len(body) :] or "\n")
            return


def _keeping_shape(line: str, new: str) -> str:
    """`new` written as the line was: its indent and list bullet kept unless `new` has one."""
    stripped = new.strip()
    indent = line[: len(line) - len(line.lstrip())]
    bullet = bullet_of(line)
    if bullet_of(stripped) or stripped.startswith("#"):
        bullet = ""
    return f"{indent}{bullet}{stripped}"


def _new_facts(current: str, facts: Sequence[str]) -> list[str]:
    """The facts not in the file's current lines (a superseded one may come back: moved back)."""
    seen = "\n".join(current_lines(current.split("\n"))).lower()
    added: list[str] = []
    for fact in (" ".join(without_controls(f).split()) for f in facts):
        if fact and fact.lower() not in seen:
            added.append(fact)
            seen += "\n" + fact.lower()
    return added


def _appended(text: str, lines: list[str], section: str | None) -> str:
    """What to append for `lines` to end the file, under `## section` when given: the heading
    too, unless it is the file's last heading already."""
    block = "\n".join(lines) + "\n"
    lead = "" if not text or text.endswith("\n") else "\n"
    if section is None or _last_heading(text) == f"## {section}":
        return lead + block
    gap = "\n" if text.strip() else ""
    return f"{lead}{gap}## {section}\n{block}"


def _last_heading(text: str) -> str | None:
    headings = (line.strip() for line in reversed(text.split("\n")) if line.startswith("#"))
    return next(headings, None)


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def new_lines(update: str, *, seen: str, current: str) -> list[str]:
    """Lines the model added: in `update` but neither in what it saw nor in the file now (so a
    fact deleted by hand meanwhile is not brought back). Headings and bullets are dropped."""
    known = {bare(line) for line in (seen + "\n" + current).splitlines()}
    found: list[str] = []
    for line in update.splitlines():
        fact = bare(line)
        if fact and not fact.startswith("#") and fact not in known and fact not in found:
            found.append(fact)
    return found
