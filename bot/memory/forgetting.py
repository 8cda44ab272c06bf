"""Forgetting that forgets: every place the bot would use a text loses it, and /undo brings it
back for a short while.

Where a chat's text can be (its visible scopes only, DESIGN §3; `targets`):

    MEMORY.md, chat memory, daily notes, archived notes, HISTORY*.md,
    this session's working memory, structured items (JSONL)       lines containing it removed
    this conversation, this chat's past conversations,
    pending consolidation jobs of this chat                        messages holding it marked

Matching is case-insensitive. A markdown or JSONL line that holds the text is removed (every
other byte kept); a message that holds it (in its text or a tool call's arguments) has its
content replaced by `MARKER`. Each file is rewritten atomically under the lock its other
writers hold, after its original bytes went to the undo store (`bot.storage.undo`). A file
that is not text, or a JSON document that is not one, is left alone and reported. The caller
holds the chat's lock (no turn runs meanwhile) and makes the index follow.

Undo puts back what this chat's last forget removed: a file as forget left it gets its original
bytes; one that only grew since (notes, history) gets the original plus what was added; a
session document gets its messages' contents back where the marker still stands; any other
change keeps the file as it is and adds the removed lines back at its end (and says so).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from textwrap import shorten
from typing import Any, Literal

import structlog

from bot.memory.scopes import visible_scopes
from bot.models import MemoryScope
from bot.storage.files import FileLocks, atomic_write_bytes
from bot.storage.lines import decode_text
from bot.storage.undo import Kept, UndoStore, digest
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)
MARKER = "[forgotten]"
FORGET_MIN_CHARS = 3  # a shorter text would match too much
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


class Forgetting:
    def __init__(self, workspace: Workspace, locks: FileLocks, undo: UndoStore) -> None:
        self.workspace = workspace
        self.locks = locks
        self.undo = undo

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
                samples += [(self._name(target.path, home), text) for text in found]
        if not counts:
            await asyncio.to_thread(self.undo.drop, session_key)
        log.info("memory_forget", removed=sum(counts.values()), skipped=len(skipped))
        return Forgotten(dict(counts), tuple(samples), tuple(skipped))

    def targets(self, scope: MemoryScope, session_key: str) -> list[Target]:
        """Every file of this chat that may hold a text (blocking)."""
        found: list[Target] = []
        for each in visible_scopes(scope, session_key):
            found += self._scope_targets(each, own=each == scope)
        ws = self.workspace
        working = ws.working_memory_path(session_key)
        found.append(Target("working memory", working, "lines", working))
        found.append(Target("this conversation", ws.session_path(session_key), "messages", None))
        for path in ws.archived_session_paths(session_key):
            found.append(Target("past conversations", path, "messages", None))
        for path in sorted(ws.consolidation_dir.glob("*.json")):
            if _job_of(path) == session_key:
                found.append(Target("pending consolidation", path, "messages", None))
        return [t for t in found if t.path.is_file()]

    def _scope_targets(self, scope: MemoryScope, *, own: bool) -> list[Target]:
        ws = self.workspace
        memory = ws.long_term_path(scope)
        archive = ws.archive_note_dir(scope)
        history = ws.history_path(scope)
        found = [Target("MEMORY.md" if own else "chat memory", memory, "lines", memory)]
        found += [Target("daily notes", p, "lines", archive) for p in ws.daily_note_paths(scope)]
        found += [
            Target("archived notes", p, "lines", archive) for p in sorted(archive.glob("*.md"))
        ]
        folder = ws.memory_dir(scope)
        found += [
            Target("history", p, "lines", history) for p in sorted(folder.glob("HISTORY*.md"))
        ]
        for path in sorted(ws.items_dir(scope).rglob("*.jsonl")):
            lock = path.parent if path.parent.name == "episodic" else path  # `ItemStore.lock`
            found.append(Target("items", path, "lines", lock))
        return found

    def _forget_in(self, target: Target, needle: str, chat: str) -> list[str] | None:
        """Rewrite one file without the text: what was removed, or None when left alone."""
        try:
            data = target.path.read_bytes()
        except FileNotFoundError:
            return []
        if target.kind == "lines" and decode_text(data) is None:
            return None  # not text: never rewritten
        if needle.casefold() not in data.decode("utf-8", errors="replace").casefold():
            return []
        rewrite = _without_lines if target.kind == "lines" else _without_messages
        done = rewrite(data, needle)
        if done is None:
            return None
        written, removed = done
        self.undo.keep_file(chat, target.path, kind=target.kind, original=data, written=written)
        atomic_write_bytes(target.path, written)
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
                outcome = await asyncio.to_thread(_put_back, kept, undo.needle)
            if outcome == "missing":
                missing.append(self._name(kept.path))
            else:
                restored += 1
                if outcome == "changed":
                    changed.append(self._name(kept.path))
        await asyncio.to_thread(self.undo.drop, session_key)
        return Undone(restored, tuple(changed), tuple(missing))

    # ------------------------------------------------------------------ helpers

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


# ----------------------------------------------------------------------------- rewrites


def _without_lines(data: bytes, needle: str) -> tuple[bytes, list[str]] | None:
    if decode_text(data) is None:
        return None
    text = data.decode("utf-8", errors="surrogateescape")
    lowered = needle.casefold()
    kept: list[str] = []
    removed: list[str] = []
    for line in text.splitlines(keepends=True):
        (removed if lowered in line.casefold() else kept).append(line)
    printable = [_shown(_printable(line.rstrip("\r\n"))) for line in removed]
    return "".join(kept).encode("utf-8", errors="surrogateescape"), printable


def _without_messages(data: bytes, needle: str) -> tuple[bytes, list[str]] | None:
    document = _document(data)
    if document is None:
        return None
    lowered, removed = needle.casefold(), []
    for message in document["messages"]:
        if isinstance(message, dict) and lowered in _said(message).casefold():
            removed.append(str(message.get("content") or "")[:200])
            message["content"] = MARKER
            for call in message.get("tool_calls") or ():
                call["arguments"] = "{}"
    return _encode(document), removed


def _said(message: dict[str, Any]) -> str:
    calls = " ".join(str(c.get("arguments", "")) for c in message.get("tool_calls") or ())
    return f"{message.get('content') or ''} {calls}"


def _put_back(kept: Kept, needle: str) -> Literal["restored", "changed", "missing"]:
    try:
        current = kept.path.read_bytes()
    except FileNotFoundError:
        return "missing"
    if digest(current) == kept.written:
        atomic_write_bytes(kept.path, kept.original)
        return "restored"
    if kept.kind == "messages":
        return _put_back_messages(kept, current)
    return _put_back_lines(kept, current, needle)


def _put_back_lines(kept: Kept, current: bytes, needle: str) -> Literal["restored", "changed"]:
    done = _without_lines(kept.original, needle)  # what forget wrote, made again
    written = done[0] if done is not None and digest(done[0]) == kept.written else None
    if written is not None and current.startswith(written):  # only appended to since
        atomic_write_bytes(kept.path, kept.original + current[len(written) :])
        return "restored"
    original = kept.original.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    now = current.decode("utf-8", errors="surrogateescape")
    lines = set(now.splitlines(keepends=True))
    back = "".join(line for line in original if line not in lines)
    joined = now if not now or now.endswith("\n") else now + "\n"
    atomic_write_bytes(kept.path, (joined + back).encode("utf-8", errors="surrogateescape"))
    return "changed"


def _put_back_messages(kept: Kept, current: bytes) -> Literal["restored", "changed", "missing"]:
    before, now = _document(kept.original), _document(current)
    if before is None or now is None:
        return "missing"
    marked = [m for m in now["messages"] if isinstance(m, dict) and m.get("content") == MARKER]
    for old in before["messages"]:
        twin = next((m for m in marked if _same(m, old)), None)
        if twin is not None and isinstance(old, dict):
            twin["content"] = old.get("content")
            if old.get("tool_calls"):
                twin["tool_calls"] = old["tool_calls"]
            marked.remove(twin)
    atomic_write_bytes(kept.path, _encode(now))
    return "restored"


def _same(message: dict[str, Any], old: object) -> bool:
    if not isinstance(old, dict) or old.get("content") == MARKER:
        return False
    keys = ("role", "at", "turn", "tool_call_id")
    return all(message.get(key) == old.get(key) for key in keys)


# ----------------------------------------------------------------------------- documents


def _document(data: bytes) -> dict[str, Any] | None:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        return None
    return document


def _encode(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _job_of(path: Path) -> str | None:
    document = _document(path.read_bytes()) if path.is_file() else None
    return None if document is None else str(document.get("session_key"))


def _shown(line: str) -> str:
    """How a removed line reads in the receipt: an item's JSONL line as its text."""
    if not line.startswith("{"):
        return line
    try:
        item = json.loads(line)
    except ValueError:
        return line
    text = item.get("text") if isinstance(item, dict) else None
    return text if isinstance(text, str) else line


def _printable(line: str) -> str:
    return line.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


PLACES = (
    "MEMORY.md",
    "chat memory",
    "working memory",
    "daily notes",
    "archived notes",
    "history",
    "items",
    "this conversation",
    "past conversations",
    "pending consolidation",
)
MESSAGES = frozenset({"this conversation", "past conversations", "pending consolidation"})
RECEIPT_LINES = 30
RECEIPT_CHARS = 200


def forget_receipt(needle: str, forgotten: Forgotten, *, undo_minutes: int) -> str:
    """What a forget removed: how much, per place; each line with its file (at most
    `RECEIPT_LINES`); files left alone; how to undo it."""
    if not forgotten.total:
        lines = [f"Nothing in this chat's memory contains “{needle}”."]
    else:
        places = ", ".join(f"{p} {forgotten.counts[p]}" for p in PLACES if p in forgotten.counts)
        lines = [f"Forgot {_amount(forgotten)} containing “{needle}” ({places}):"]
        shown = forgotten.samples[:RECEIPT_LINES]
        lines += [
            f"{file}: {shorten(text, RECEIPT_CHARS, placeholder=' …')}" for file, text in shown
        ]
        if len(forgotten.samples) > RECEIPT_LINES:
            lines.append(f"… and {len(forgotten.samples) - RECEIPT_LINES} more")
    if forgotten.skipped:
        lines.append(f"Left alone (not text): {', '.join(forgotten.skipped)}")
    if forgotten.total:
        lines.append(f"/undo within {undo_minutes} minutes puts it back; after that it is gone.")
    return "\n".join(lines)


def _short(text: str) -> str:
    return shorten(text, RECEIPT_CHARS, placeholder=" …")


def _amount(forgotten: Forgotten) -> str:
    messages = sum(n for place, n in forgotten.counts.items() if place in MESSAGES)
    lines = forgotten.total - messages
    parts = [_plural(lines, "line")] if lines else []
    parts += [_plural(messages, "message")] if messages else []
    return " and ".join(parts)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def undo_receipt(undone: Undone | None, *, expired: bool, undo_minutes: int) -> str:
    if undone is None:
        if expired:
            return f"Too late to undo: a /forget can be undone for {undo_minutes} minutes."
        return "Nothing to undo."
    lines = [f"Put back what the last /forget removed ({undone.restored} files)."]
    if undone.changed:
        changed = ", ".join(undone.changed)
        lines.append(f"Changed since, so the lines went back at their end: {changed}")
    if undone.missing:
        lines.append(f"Gone since, not restored: {', '.join(undone.missing)}")
    return "\n".join(lines)
