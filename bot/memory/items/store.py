"""Item files: each scope's JSONL stores of memory items, read through a cache, written locked.

Layout (`Workspace.items_dir(scope)`): `episodic/YYYY-MM-DD.jsonl` (by the day an item was
made), `semantic.jsonl`, `procedural.jsonl`. Privacy follows the folder: an item read from a
scope's folder belongs to that scope, whatever its line says, and a file that leads out of
that folder (`bot.storage.confined`) is read as empty and never written.

- A line that does not parse is skipped with a warning and kept verbatim on every rewrite.
- One lock per scope and layer (`lock`) covers appends and rewrites of that layer's files, so a
  writer can read, decide and write without a race. An append is one O_APPEND write; an update
  is an atomic rewrite of the one file that holds the item.
- Reads and the `*_locked` writes block: call them through `asyncio.to_thread`, the writes
  while holding `lock`. Parsed files are cached by their stat signature, the list of episodic
  files by its folder's mtime.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path

import structlog

from bot.errors import OutOfScopeError
from bot.memory.items.format import ItemFormatError, decode, encode
from bot.memory.items.rules import episodic_day, used
from bot.models import MemoryItem, MemoryLayer, MemoryScope
from bot.storage.files import FileLocks, append_text, atomic_write_text, read_text
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)
CACHE_FILES = 1024
Signature = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns


@dataclass(frozen=True)
class ItemFile:
    """One JSONL file: its items, and its other lines kept verbatim, in file order."""

    path: Path
    lines: tuple[MemoryItem | str, ...]

    @property
    def items(self) -> tuple[MemoryItem, ...]:
        return tuple(line for line in self.lines if isinstance(line, MemoryItem))


class ItemStore:
    def __init__(self, workspace: Workspace, locks: FileLocks) -> None:
        self.workspace = workspace
        self.locks = locks
        self._cache: OrderedDict[Path, tuple[Signature, ItemFile]] = OrderedDict()
        self._listings: dict[Path, tuple[int, list[Path]]] = {}
        self._cache_lock = threading.Lock()

    # ------------------------------------------------------------------ paths and the lock

    def home_path(self, scope: MemoryScope, layer: MemoryLayer, day: date) -> Path:
        """The file a new item of `layer` made on `day` goes to."""
        if layer is MemoryLayer.EPISODIC:
            return self.workspace.episodic_items_path(scope, day)
        if layer is MemoryLayer.SEMANTIC:
            return self.workspace.semantic_items_path(scope)
        return self.workspace.procedural_items_path(scope)

    def layer_paths(
        self, scope: MemoryScope, layer: MemoryLayer, *, since: date | None = None
    ) -> list[Path]:
        """The layer's files, oldest first; episodic ones from `since` on when given."""
        if layer is not MemoryLayer.EPISODIC:
            return [self.home_path(scope, layer, date.min)]
        first = since.isoformat() if since else ""
        return [p for p in self._episodic_paths(scope) if p.stem >= first]

    def layer_of(self, item_id: str) -> MemoryLayer | None:
        """The layer an id names (see `items.new_id`), or None for an unknown kind of id."""
        if episodic_day(item_id):
            return MemoryLayer.EPISODIC
        prefix, _, _ = item_id.partition("-")
        return {"s": MemoryLayer.SEMANTIC, "p": MemoryLayer.PROCEDURAL}.get(prefix)

    def _episodic_paths(self, scope: MemoryScope) -> list[Path]:
        """The episodic files, listed again only when the folder changed."""
        folder = self.workspace.episodic_items_path(scope, date.min).parent
        try:
            changed = os.stat(folder).st_mtime_ns
        except FileNotFoundError:
            return []
        with self._cache_lock:
            listed = self._listings.get(folder)
        if listed is None or listed[0] != changed:
            listed = (changed, self.workspace.episodic_items_paths(scope))
            with self._cache_lock:
                self._listings[folder] = listed
        return listed[1]

    def path_of(self, scope: MemoryScope, item_id: str) -> Path | None:
        """The file that holds the item with this id (its id says), or None."""
        layer = self.layer_of(item_id)
        if layer is None:
            return None
        return self.home_path(scope, layer, episodic_day(item_id) or date.min)

    def lock(self, scope: MemoryScope, layer: MemoryLayer) -> AbstractAsyncContextManager[None]:
        key = self.home_path(scope, layer, date.min)
        return self.locks.hold(key.parent if layer is MemoryLayer.EPISODIC else key)

    # ------------------------------------------------------------------ reads (blocking)

    def read(self, path: Path, scope: MemoryScope) -> ItemFile:
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            return ItemFile(path, ())
        signature = (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        with self._cache_lock:
            cached = self._cache.get(path)
        if cached is not None and cached[0] == signature:
            return cached[1]
        text = read_text(path) if self.workspace.inside_scope(path) else None
        parsed = _parse(path, text or "", scope)
        with self._cache_lock:
            self._cache[path] = (signature, parsed)
            self._cache.move_to_end(path)
            while len(self._cache) > CACHE_FILES:
                self._cache.popitem(last=False)
        return parsed

    def items(
        self, scope: MemoryScope, layer: MemoryLayer, *, since: date | None = None
    ) -> list[MemoryItem]:
        """Every item of the layer (any status), oldest file first."""
        paths = self.layer_paths(scope, layer, since=since)
        return [item for path in paths for item in self.read(path, scope).items]

    def find(self, scope: MemoryScope, item_id: str) -> MemoryItem | None:
        path = self.path_of(scope, item_id)
        if path is None:
            return None
        return next((i for i in self.read(path, scope).items if i.id == item_id), None)

    # ------------------------------------------------------------------ writes (blocking, locked)

    def append_locked(self, path: Path, item: MemoryItem) -> None:
        if not self.workspace.inside_scope(path):
            raise OutOfScopeError(f"{path.name} leads out of its scope's folder")
        append_text(path, _line_break(path) + encode(item) + "\n")

    def rewrite_locked(
        self, path: Path, scope: MemoryScope, changes: Mapping[str, MemoryItem]
    ) -> int:
        """Replace the items whose ids `changes` names; other lines stay as they are."""
        current = self.read(path, scope)
        lines = [_changed(line, changes) for line in current.lines]
        changed = sum(1 for old, new in zip(current.lines, lines, strict=True) if old is not new)
        if changed:
            text = "".join((encode(x) if isinstance(x, MemoryItem) else x) + "\n" for x in lines)
            atomic_write_text(path, text)
        return changed

    # ------------------------------------------------------------------ last used

    async def touch(self, scope: MemoryScope, items: Iterable[MemoryItem], at: datetime) -> int:
        """Mark `items` (read from `scope`) as shown at `at`; how many were found."""
        by_path: dict[tuple[MemoryLayer, Path], set[str]] = defaultdict(set)
        for item in items:
            if path := self.path_of(scope, item.id):
                by_path[item.layer, path].add(item.id)
        touched = 0
        for (layer, path), ids in by_path.items():
            async with self.lock(scope, layer):
                touched += await asyncio.to_thread(self._touch_locked, path, scope, ids, at)
        return touched

    def _touch_locked(self, path: Path, scope: MemoryScope, ids: set[str], at: datetime) -> int:
        """The file's current version of each item (it may have changed), marked used."""
        changes = {i.id: used(i, at) for i in self.read(path, scope).items if i.id in ids}
        return self.rewrite_locked(path, scope, changes)


def _parse(path: Path, text: str, scope: MemoryScope) -> ItemFile:
    lines: list[MemoryItem | str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            lines.append(replace(decode(line), scope=scope.chat_key or ""))
        except ItemFormatError as exc:
            log.warning("memory_item_unreadable", path=str(path), line=number, error=str(exc))
            lines.append(line)
    return ItemFile(path, tuple(lines))


def _changed(line: MemoryItem | str, changes: Mapping[str, MemoryItem]) -> MemoryItem | str:
    if isinstance(line, MemoryItem):
        return changes.get(line.id, line)
    return line


def _line_break(path: Path) -> str:
    """A newline first when the file does not end with one (a hand edit), so lines never fuse."""
    try:
        with path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return "" if handle.read(1) == b"\n" else "\n"
    except OSError:  # missing or empty
        return ""
