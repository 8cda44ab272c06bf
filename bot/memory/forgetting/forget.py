"""`Forgetting`: every place a chat's text may be, rewritten without it, and the undo."""

from __future__ import annotations

import asyncio
from collections import Counter
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import structlog

from bot.memory.forgetting.files import job_of, put_back, without_lines, without_messages
from bot.memory.notes import quoted
from bot.memory.provenance import FactOrigins, brief, of_line
from bot.memory.scopes import visible_scopes
from bot.models import MemoryScope
from bot.storage.chatter import ChatterStore
from bot.storage.files import Documents, Locks
from bot.storage.lines import decode_text
from bot.storage.undo import Kept, UndoStore
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)


Kind = Literal["lines", "messages"]


@dataclass(frozen=True)
class Target:
    place: str  # how the receipt names it: "MEMORY.md", "daily notes", "this conversation" …
    path: Path
    kind: Kind
    lock: Path | None  # the FileLocks key its other writers hold; None: the chat lock is enough


@dataclass(frozen=True)
class Forgotten:
    counts: dict[str, int]  # per place: lines or messages
    samples: tuple[tuple[str, str], ...]  # (file, removed line or message text)
    skipped: tuple[str, ...]  # files left alone (not text, not a document)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Undone:
    restored: int  # files put back
    changed: tuple[str, ...]  # files changed since the forget: lines added back at the end
    missing: tuple[str, ...]  # files gone since (moved by /new or archiving)


CHATTER = "group chatter"  # the receipt's place for `ChatterStore`'s messages


class Copies(Protocol):
    """A store that keeps copies of a chat's texts for its own use (`bot.receipts`'s store): it
    drops those holding the needle; they are not put back by undo."""

    async def forget(self, chat: str, needle: str) -> list[str]: ...


class Forgetting:
    def __init__(
        self,
        workspace: Workspace,
        locks: Locks,
        undo: UndoStore,
        chatter: ChatterStore | None = None,  # a group's messages waiting for the next turn
        copies: Copies | None = None,  # memory receipts
    ) -> None:
        self.workspace = workspace
        self.documents = workspace.documents  # the files, or shared by the replicas
        self.locks = locks
        self.undo = undo
        self.chatter = chatter
        self.copies = copies

    # ------------------------------------------------------------------ forget

    async def forget(self, scope: MemoryScope, session_key: str, needle: str) -> Forgotten:
        targets = await asyncio.to_thread(self.targets, scope, session_key)
        await asyncio.to_thread(self.undo.begin, session_key, needle)
        counts: Counter[str] = Counter()
        samples: list[tuple[str, str]] = []
        skipped: list[str] = []
        home = self.workspace.memory_dir(scope)
        for target in targets:
            async with self._hold(target):
                found = await asyncio.to_thread(self._forget_in, target, needle, session_key)
            if found is None:
                skipped.append(self._name(target.path, home))
            elif found:
                counts[target.place] += len(found)
                name = self._name(target.path, home)
                samples += [(name, self._with_origin(target.path, text)) for text in found]
        said = await self.chatter.forget(session_key, needle) if self.chatter else []
        if said:
            counts[CHATTER] += len(said)
            samples += [(CHATTER, text) for text in said]
        if self.copies is not None:
            await self.copies.forget(session_key, needle)
        if not counts:
            await asyncio.to_thread(self.undo.drop, session_key)
        log.info("memory_forget", removed=sum(counts.values()), skipped=len(skipped))
        return Forgotten(dict(counts), tuple(samples), tuple(skipped))

    def targets(self, scope: MemoryScope, session_key: str) -> list[Target]:
        """Every file of this chat that may hold a text (blocking)."""
        found: list[Target] = []
        for each in visible_scopes(scope, session_key):
            found += self._scope_targets(each, own=each == scope)
        ws, documents = self.workspace, self.documents
        working = ws.working_memory_path(session_key)
        found.append(Target("working memory", working, "lines", working))
        current = ws.session_path(session_key)  # locked as `SessionStore.save` locks it
        found.append(Target("this conversation", current, "messages", current))
        for path in ws.archived_session_paths(session_key):
            found.append(Target("past conversations", path, "messages", None))
        for path in documents.listing(ws.consolidation_dir, "*.json"):
            if job_of(documents, path) == session_key:
                found.append(Target("pending consolidation", path, "messages", None))
        held = [t for t in found if documents.version(t.path) is not None]
        return [t for t in held if ws.inside_scope(t.path)]

    def _scope_targets(self, scope: MemoryScope, *, own: bool) -> list[Target]:
        ws, documents = self.workspace, self.documents
        memory = ws.long_term_path(scope)
        archive = ws.archive_note_dir(scope)
        history = ws.history_path(scope)
        found = [Target("MEMORY.md" if own else "chat memory", memory, "lines", memory)]
        found += [Target("quoted material", quoted.path_of(memory), "lines", memory)]
        found += [Target("daily notes", p, "lines", archive) for p in ws.daily_note_paths(scope)]
        found += [
            Target("archived notes", p, "lines", archive)
            for p in documents.listing(archive, "*.md")
        ]
        folder = ws.memory_dir(scope)
        found += [
            Target("history", p, "lines", history) for p in documents.listing(folder, "HISTORY*.md")
        ]
        texts = documents.listing(ws.media_dir(scope), "*.md")  # documents' text (`bot.media`)
        found += [Target("documents' text", p, "lines", p) for p in texts]
        reminders = ws.reminders_path(scope)
        found.append(Target("reminders", reminders, "lines", reminders))
        for path in (p for p in documents.walk(ws.items_dir(scope)) if p.suffix == ".jsonl"):
            lock = path.parent if path.parent.name == "episodic" else path  # `ItemStore.lock`
            found.append(Target("items", path, "lines", lock))
        return found

    def _forget_in(self, target: Target, needle: str, chat: str) -> list[str] | None:
        """Rewrite one file without the text: what was removed, or None when left alone."""
        data = self.documents.read(target.path)
        if data is None:
            return []
        if target.kind == "lines" and decode_text(data) is None:
            return None  # not text: never rewritten
        if needle.casefold() not in data.decode("utf-8", errors="replace").casefold():
            return []
        rewrite = without_lines if target.kind == "lines" else without_messages
        done = rewrite(data, needle)
        if done is None:
            return None
        written, removed = done
        self.undo.keep_file(chat, target.path, kind=target.kind, original=data, written=written)
        self.documents.write(target.path, written)
        return removed

    # ------------------------------------------------------------------ undo

    async def expired(self, session_key: str) -> bool:
        """True when this chat's last forget can no longer be undone (its data is gone)."""
        return await asyncio.to_thread(self.undo.expired, session_key)

    async def restore(self, session_key: str) -> Undone | None:
        """Put back what this chat's last forget removed; None when there is nothing (or it
        expired). The undo data is deleted afterwards."""
        undo = await asyncio.to_thread(self.undo.load, session_key)
        if undo is None:
            return None
        restored, changed, missing = 0, [], []
        for kept in undo.files:
            async with self.locks.hold(kept.path) if _locked(kept) else nullcontext():
                outcome = await asyncio.to_thread(put_back, self.documents, kept, undo.needle)
            if outcome == "missing":
                missing.append(self._name(kept.path))
            else:
                restored += 1
                if outcome == "changed":
                    changed.append(self._name(kept.path))
        await asyncio.to_thread(self.undo.drop, session_key)
        return Undone(restored, tuple(changed), tuple(missing))

    # ------------------------------------------------------------------ helpers

    def _with_origin(self, path: Path, line: str) -> str:
        return with_origin(path, line, self.documents)

    def _hold(self, target: Target) -> AbstractAsyncContextManager[None]:
        return self.locks.hold(target.lock) if target.lock is not None else nullcontext()

    def _name(self, path: Path, home: Path | None = None) -> str:
        """The path from the chat's own memory folder, else from `memory/`, else from the
        workspace (sessions, jobs)."""
        for base in (home, self.workspace.memory_root, self.workspace.root):
            if base is not None and path.is_relative_to(base):
                return path.relative_to(base).as_posix()
        return path.name


def _locked(kept: Kept) -> bool:
    return kept.kind == "lines"


def with_origin(path: Path, line: str, documents: Documents) -> str:
    """A removed MEMORY.md line with who said it, how and when, when that is known (its side
    file keeps no text, so it still knows after the line is gone)."""
    if path.name != "MEMORY.md":
        return line
    origin = of_line(FactOrigins(path, documents).read(), line)
    return f"{line} — {brief(origin)}" if origin else line
