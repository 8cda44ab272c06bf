"""Item files as parsed, kept in memory: what each JSONL file held when last read, and the
reading that brings it up to date without parsing it all again.

- A file is one item a line (`format.file_lines`); a blank line is skipped, a line that does
  not parse is kept verbatim.
- A file is a document of the workspace (`Documents`: on this disk, or shared by the
  replicas). One whose version (`Documents.version`: a file's inode, size, mtime_ns, ctime_ns)
  is the one read last is not read at all. A file that only grew — the same inode, more bytes,
  its last line complete and
  the last `TAIL` bytes before the old end unchanged — has only the new bytes read and parsed
  (an item appended each turn). Anything else (an atomic rewrite, a hand edit, a shrink) is
  read whole. The check of the old bytes is a cheap one: an edit of the same length far before
  the old end, saved in place together with an append, would go unseen until the next rewrite.
- `FileCache` keeps the last `CACHE_FILES` files read (least recently read dropped first); its
  owner (`ItemStore`) holds a lock around it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import structlog

from bot.memory.items.format import ItemFormatError, decode, file_lines
from bot.models import MemoryItem, MemoryScope
from bot.storage.files import Documents, Signature

log = structlog.get_logger(__name__)
CACHE_FILES = 1024
TAIL = 1024  # bytes before a file's old end that must be unchanged for it to count as grown


@dataclass(frozen=True, eq=False)
class ItemFile:
    """One JSONL file: its items, and its other lines kept verbatim, in file order; and where
    each id (its first line) and each fingerprint is, so that an item is found without a scan."""

    path: Path
    lines: tuple[MemoryItem | str, ...] = ()
    items: tuple[MemoryItem, ...] = ()
    where: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # id -> line, item
    alike: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # fingerprint -> items

    @classmethod
    def of(cls, path: Path, lines: Sequence[MemoryItem | str]) -> ItemFile:
        return cls(path).extended(lines)

    def extended(self, lines: Sequence[MemoryItem | str]) -> ItemFile:
        """This file with `lines` appended."""
        where, alike = dict(self.where), dict(self.alike)
        items: list[MemoryItem] = []
        added: dict[str, list[int]] = {}
        for at_line, line in enumerate(lines, start=len(self.lines)):
            if isinstance(line, MemoryItem):
                at_item = len(self.items) + len(items)
                where.setdefault(line.id, (at_line, at_item))
                added.setdefault(line.fingerprint, []).append(at_item)
                items.append(line)
        for fingerprint, found in added.items():
            alike[fingerprint] = (*alike.get(fingerprint, ()), *found)
        return ItemFile(self.path, (*self.lines, *lines), (*self.items, *items), where, alike)

    def find(self, item_id: str) -> MemoryItem | None:
        found = self.where.get(item_id)
        return None if found is None else self.items[found[1]]

    def twin(self, fingerprint: str) -> MemoryItem | None:
        """The first item with this fingerprint that is not forgotten."""
        alike = (self.items[n] for n in self.alike.get(fingerprint, ()))
        return next((item for item in alike if item.status != "forgotten"), None)

    def with_items(self, changes: Mapping[str, MemoryItem]) -> ItemFile:
        """This file with the items whose ids `changes` names replaced by versions that keep
        their id, text and status (a last-used mark)."""
        lines, items = list(self.lines), list(self.items)
        for item_id, item in changes.items():
            at_line, at_item = self.where[item_id]
            lines[at_line] = items[at_item] = item
        return ItemFile(self.path, tuple(lines), tuple(items), self.where, self.alike)


@dataclass(frozen=True)
class Parsed:
    """A file as read: its signature then, and what a later read needs to parse only what
    was appended since."""

    file: ItemFile
    signature: Signature  # the stat before the read: a read that finds it again parses nothing
    size: int = 0  # bytes parsed (more than the signature's when the file grew meanwhile)
    tail: bytes = b""  # the last `TAIL` of them
    count: int = 0  # lines parsed, blank ones included (for the line numbers of warnings)
    kept: int = 0  # items carried over from the parse before (those after them are new)

    @property
    def extensible(self) -> bool:
        """Whether bytes appended later would start a new line."""
        return self.tail.endswith(b"\n")


def read_whole(
    documents: Documents, path: Path, scope: MemoryScope, signature: Signature
) -> Parsed:
    """The whole file parsed (empty when it cannot be read, which is logged)."""
    data = _read_bytes(documents, path)
    if data is None:
        return Parsed(ItemFile(path), signature)
    lines, count = parse_lines(path, data, scope, first=1)
    return Parsed(ItemFile.of(path, lines), signature, len(data), data[-TAIL:], count)


def read_grown(
    documents: Documents, path: Path, scope: MemoryScope, before: Parsed, signature: Signature
) -> Parsed | None:
    """`before` with the lines appended since parsed and added, or None when the file (now at
    version `signature`) did not only grow (then it must be read whole)."""
    inode, size = signature[0], signature[1]
    if inode != before.signature[0] or size <= before.size or not before.extensible:
        return None
    start = before.size - len(before.tail)
    try:
        with documents.open(path) as handle:
            handle.seek(start)
            data = handle.read()
    except OSError:
        return None
    if not data.startswith(before.tail) or len(data) <= len(before.tail):
        return None
    new = data[len(before.tail) :]
    lines, count = parse_lines(path, new, scope, first=before.count + 1)
    file, size = before.file.extended(lines), start + len(data)
    kept = len(before.file.items)
    return Parsed(file, signature, size, data[-TAIL:], before.count + count, kept)


def parse_lines(
    path: Path, data: bytes, scope: MemoryScope, *, first: int
) -> tuple[tuple[MemoryItem | str, ...], int]:
    """The lines of `data` (items in `scope`, other lines verbatim) and how many there were;
    `first` is the number of the first line, for warnings."""
    texts = file_lines(data.decode("utf-8", errors="replace"))
    lines: list[MemoryItem | str] = []
    for number, line in enumerate(texts, start=first):
        if line.strip():
            lines.append(_line(path, number, line, scope))
    return tuple(lines), len(texts)


def _line(path: Path, number: int, line: str, scope: MemoryScope) -> MemoryItem | str:
    try:
        return replace(decode(line), scope=scope.chat_key or "")
    except ItemFormatError as exc:
        log.warning("memory_item_unreadable", path=str(path), line=number, error=str(exc))
        return line


def _read_bytes(documents: Documents, path: Path) -> bytes | None:
    try:
        return documents.read(path)
    except OSError as exc:
        log.warning("file_unreadable", path=str(path), error=type(exc).__name__)
        return None


class FileCache:
    """The last `size` files parsed, by path (not thread-safe: its owner holds a lock)."""

    def __init__(self, size: int = CACHE_FILES) -> None:
        self.size = size
        self._files: OrderedDict[Path, Parsed] = OrderedDict()

    def get(self, path: Path) -> Parsed | None:
        found = self._files.get(path)
        if found is not None:
            self._files.move_to_end(path)
        return found

    def put(self, path: Path, parsed: Parsed) -> None:
        self._files[path] = parsed
        self._files.move_to_end(path)
        while len(self._files) > self.size:
            self._files.popitem(last=False)
