"""Item files: each scope's JSONL stores of memory items, read through a cache, written locked.

Layout (`Workspace.items_dir(scope)`): `episodic/YYYY-MM-DD.jsonl` (by the day an item was
made), `semantic.jsonl`, `procedural.jsonl`. Privacy follows the folder: an item read from a
scope's folder belongs to that scope, whatever its line says, and a file that leads out of
that folder (`bot.storage.confined`) is read as empty and never written.

- The files are documents of the workspace (`Workspace.documents`: on this disk, or shared by
  the replicas), read and written through it alone.
- A line that does not parse is skipped with a warning and kept verbatim on every rewrite.
- One lock per scope and layer (`lock`, the workspace's `Locks`: the replicas' own when they
  share the files) covers appends and rewrites of that layer's files, so a writer can read,
  decide and write without a race. An append is one append to the document; an update is a
  rewrite, in one step, of the one file that holds the item, written only over the version it
  read (`Documents.write_if`): a person's edit made meanwhile (a person takes no lock) is read
  and the update made again on it, never written over.
- Reads and the `*_locked` writes block: call them through `asyncio.to_thread`, the writes
  while holding `lock`. Parsed files are kept in memory by their documents' versions (`cache`:
  a file that only grew has only its new lines parsed), and so is what a rewrite wrote; the
  list of episodic files is kept by its folder's version, where the folder has one (on disk).
- Last-used marks (`touch`) wait in memory (`usage`): a read sees them at once, a rewrite of
  their file writes them, `save_marks` writes the rest (every few minutes and at stop, through
  `usage.UsageSaver`).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path

import structlog

from bot.errors import OutOfScopeError
from bot.memory.items.cache import (
    TAIL,
    FileCache,
    ItemFile,
    Parsed,
    read_grown,
    read_whole,
)
from bot.memory.items.format import encode
from bot.memory.items.rules import episodic_day
from bot.memory.items.usage import MAX_PENDING, Pending, UsageMarks
from bot.models import MemoryItem, MemoryLayer, MemoryScope
from bot.storage.files import Documents, Locks, Signature
from bot.storage.workspace import Workspace

__all__ = ["ItemFile", "ItemStore"]
log = structlog.get_logger(__name__)
REWRITE_TRIES = 3  # reads of a file a person keeps changing before a rewrite gives up
REREADS = 3  # parses of a file the store keeps rewriting before a read keeps the last one


class ItemStore:
    def __init__(self, workspace: Workspace, locks: Locks, *, max_marks: int = MAX_PENDING) -> None:
        self.workspace = workspace
        self.documents: Documents = workspace.documents
        self.locks = locks
        self.max_marks = max_marks  # last-used marks waiting in memory at most (then saved)
        self._files = FileCache()
        self._marks = UsageMarks()
        self._lock = threading.Lock()  # the parsed files, the marks, the count of rewrites
        self._rewrites: dict[Path, int] = {}  # by file: a read overtaken by one parses again
        self._listings: dict[Path, tuple[Signature, list[tuple[str, Path]]]] = {}
        self._listings_lock = threading.Lock()

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
        return [path for day, path in self._episodic_paths(scope) if day >= first]

    def layer_of(self, item_id: str) -> MemoryLayer | None:
        """The layer an id names (see `items.new_id`), or None for an unknown kind of id."""
        if episodic_day(item_id):
            return MemoryLayer.EPISODIC
        prefix, _, _ = item_id.partition("-")
        return {"s": MemoryLayer.SEMANTIC, "p": MemoryLayer.PROCEDURAL}.get(prefix)

    def _episodic_paths(self, scope: MemoryScope) -> list[tuple[str, Path]]:
        """The episodic files and their days, listed again only when the folder changed (every
        time where a folder has no version: the documents are rows the replicas share)."""
        folder = self.workspace.episodic_items_path(scope, date.min).parent
        changed = self.documents.version(folder)
        if changed is None:
            return [(p.stem, p) for p in self.workspace.episodic_items_paths(scope)]
        with self._listings_lock:
            listed = self._listings.get(folder)
        if listed is None or listed[0] != changed:
            listed = (changed, [(p.stem, p) for p in self.workspace.episodic_items_paths(scope)])
            with self._listings_lock:
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
        """The file as it is now, with the last-used marks not written yet. A parse that a
        rewrite of the file overtook is made again (`REREADS` times, then kept as it is): the
        rewrite dropped the marks it wrote, which the older text it parsed lacks."""
        file, tries = None, 0
        while file is None:
            signature = self.documents.version(path)
            if signature is None:
                return ItemFile(path)
            tries += 1
            with self._lock:
                cached, version = self._files.get(path), self._marks.version
                rewrites = self._rewrites.get(path, 0) if tries <= REREADS else None
            if cached is not None and cached.signature == signature:
                return cached.file
            parsed = self._parse(path, scope, signature, cached)
            file = self._keep(path, parsed, version=version, rewrites=rewrites)
        return file

    def _parse(
        self, path: Path, scope: MemoryScope, signature: Signature, cached: Parsed | None
    ) -> Parsed:
        """The file parsed as far as it changed since `cached` was read."""
        if not self.workspace.inside_scope(path):
            return Parsed(ItemFile(path), signature)
        documents = self.documents
        grown = read_grown(documents, path, scope, cached, signature) if cached else None
        return grown or read_whole(documents, path, scope, signature)

    def _keep(
        self, path: Path, parsed: Parsed, *, version: int | None = None, rewrites: int | None = None
    ) -> ItemFile | None:
        """Cache the file as parsed, with its marks: on the new items only when the rest
        came from the cache and no mark was made since `version`. None, nothing kept, when the
        store rewrote the file since its count of rewrites was `rewrites`."""
        with self._lock:
            if rewrites is not None and self._rewrites.get(path, 0) != rewrites:
                return None
            only = None
            if parsed.kept and version == self._marks.version:
                only = [item.id for item in parsed.file.items[parsed.kept :]]
            kept = replace(parsed, file=self._marks.applied(parsed.file, only))
            self._files.put(path, kept)
        return kept.file

    def items(
        self, scope: MemoryScope, layer: MemoryLayer, *, since: date | None = None
    ) -> list[MemoryItem]:
        """Every item of the layer (any status), oldest file first."""
        paths = self.layer_paths(scope, layer, since=since)
        return [item for path in paths for item in self.read(path, scope).items]

    def find(self, scope: MemoryScope, item_id: str) -> MemoryItem | None:
        path = self.path_of(scope, item_id)
        return None if path is None else self.read(path, scope).find(item_id)

    # ------------------------------------------------------------------ writes (blocking, locked)

    def append_locked(self, path: Path, item: MemoryItem) -> None:
        if not self.workspace.inside_scope(path):
            raise OutOfScopeError(f"{path.name} leads out of its scope's folder")
        line = self._line_break(path) + encode(item) + "\n"
        self.documents.append(path, line.encode("utf-8"), durable=False)  # derived

    def rewrite_locked(
        self, path: Path, scope: MemoryScope, changes: Mapping[str, MemoryItem]
    ) -> int:
        """Replace the items whose ids `changes` names; other lines stay as they are. The
        last-used marks waiting for the file are written with it (nothing is written when
        neither changes anything). A file changed between the read and the write is read again
        (`REWRITE_TRIES` times; then left as it is, logged, and 0 returned)."""
        for _ in range(REWRITE_TRIES):
            read_as = self.documents.version(path)
            current = self.read(path, scope)
            lines = [_changed(line, changes) for line in current.lines]
            changed = sum(
                1 for old, new in zip(current.lines, lines, strict=True) if old is not new
            )
            with self._lock:
                waiting = self._marks.waiting(current)
            if not (changed or waiting):
                return changed
            if self._write_locked(path, ItemFile.of(path, lines), read_as):
                return changed
        log.warning("items_rewrite_refused", path=str(path), tries=REWRITE_TRIES)
        return 0

    def _write_locked(self, path: Path, file: ItemFile, read_as: Signature | None) -> bool:
        """Write `file` over the version `read_as` (False, nothing written, when it changed)."""
        text = "".join((encode(x) if isinstance(x, MemoryItem) else x) + "\n" for x in file.lines)
        data = text.encode("utf-8")
        if not self.documents.write_if(path, data, read_as):
            return False
        with self._lock:
            self._marks.written(file)
            self._rewrites[path] = self._rewrites.get(path, 0) + 1
        self._remember(path, file, data)
        return True

    def _remember(self, path: Path, file: ItemFile, data: bytes) -> None:
        """Keep what was just written as the file's parse, so the next read parses nothing
        (unless the file changed again meanwhile: then it is read as usual)."""
        try:
            signature = self.documents.version(path)
        except OSError:
            return
        if signature is not None and signature[1] == len(data):
            count = len(file.lines)
            self._keep(path, Parsed(file, signature, len(data), data[-TAIL:], count))

    def _line_break(self, path: Path) -> str:
        """A newline first when the file does not end with one (a hand edit), so lines never
        fuse: told by its parse when that is of its version, else by its last byte."""
        signature = self.documents.version(path)
        if signature is None or signature[1] == 0:
            return ""
        with self._lock:
            cached = self._files.get(path)
        if cached is not None and cached.signature == signature and cached.size == signature[1]:
            return "" if not cached.tail or cached.extensible else "\n"
        try:
            with self.documents.open(path) as handle:
                handle.seek(-1, os.SEEK_END)
                return "" if handle.read(1) == b"\n" else "\n"
        except OSError:  # missing or empty
            return ""

    # ------------------------------------------------------------------ last used

    async def touch(self, scope: MemoryScope, items: Iterable[MemoryItem], at: datetime) -> int:
        """Mark `items` (read from `scope`) as shown at `at`: at once for every read, on disk
        with the file's next rewrite or `save_marks` (see `usage`); how many marks were new."""
        by_file: dict[Pending, set[str]] = {}
        for item in items:
            if (layer := self.layer_of(item.id)) and (path := self.path_of(scope, item.id)):
                by_file.setdefault(Pending(path, scope, layer), set()).add(item.id)
        with self._lock:
            marked = sum(self._mark_locked(where, ids, at) for where, ids in by_file.items())
            waiting = self._marks.count
        if waiting > self.max_marks:
            await self.save_marks()
        return marked

    def _mark_locked(self, where: Pending, ids: set[str], at: datetime) -> int:
        """Mark the items `ids` of one file, and the cached file (if any) with them; how many
        marks were new (`self._lock` held)."""
        cached = self._files.get(where.path)
        marked = self._marks.add(where, ids, at, known=cached.file if cached else None)
        if cached is not None:
            self._files.put(where.path, replace(cached, file=self._marks.applied(cached.file, ids)))
        return marked

    async def save_marks(self) -> int:
        """Write the last-used marks that wait, each file under its layer's lock; how many
        files had some."""
        with self._lock:
            pending = self._marks.pending()
        for where in pending:
            async with self.lock(where.scope, where.layer):
                await asyncio.to_thread(self.rewrite_locked, where.path, where.scope, {})
        return len(pending)


def _changed(line: MemoryItem | str, changes: Mapping[str, MemoryItem]) -> MemoryItem | str:
    if isinstance(line, MemoryItem):
        return changes.get(line.id, line)
    return line
