"""File sync: which source files changed since the index last saw them, as source updates.

The index holds nothing that is not in a file. Each `SourceReader` owns one kind of file under
one root and turns a file's text into sources (`SourceUpdate`, each with a digest of what it was
made from): the memory markdown (`MarkdownSource`, one source a file), the session files
(`bot.index.transcripts`: one source an exchange) and the structured items' JSONL
(`bot.memory.items.indexing`: one source an item). Blocking.

Which files are looked at: every file under the roots (`source_files`, the walk: at start, on
`memory reindex`, and as a catch-up for hand edits), or only given ones (`source_files_at`: what
a turn wrote), each found as the walk would find it. Hidden files and folders (temp files of
atomic writes) are not sources, nor is anything but a regular file. A file is re-read only when
its (mtime_ns, size) moved, and re-parsed only when its sha256 changed too (a touched but
identical file is just re-recorded). A file gone from disk gives up its sources.

A file that only grew — its old bytes unchanged (their sha256 is the one recorded), ending with
a line break, and the new bytes text — is indexed as an append where its reader can (`grown`):
the items of the new JSONL lines, a daily note re-chunked from its last chunk on. What that
writes is what reading the whole file would have written; any other change is read whole.

A symlink is a source only where its reader `allows` it (for memory files, the path rule of
`bot.storage.confined`: a chat's link must stay in that chat's folder). A link refused is never
read: it is recorded with the digest `OUT_OF_SCOPE` and no sources (so what it held before goes,
with one warning), and judged again at every sync. The walk never enters a linked folder.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from stat import S_ISREG
from typing import Protocol

import structlog

from bot.index.chunking import Chunker
from bot.index.sources import source_of_file, timed_by_text
from bot.index.store import FileSignature, SourceUpdate
from bot.storage.confined import scope_escape
from bot.storage.lines import decode_text

log = structlog.get_logger(__name__)
OUT_OF_SCOPE = "out-of-scope"  # the digest of a link its reader refuses: never read
LastLine = Callable[[str], int | None]  # where a source's last chunk starts, in the index


@dataclass(frozen=True)
class Growth:
    """A file that only grew: `data` is all of it now, its first `old_size` bytes (whole
    lines) are the ones indexed before."""

    data: bytes
    old_size: int

    @cached_property
    def added(self) -> str | None:
        """The new lines' text (None when they are not text)."""
        return decode_text(self.data[self.old_size :])

    def text_from(self, line: int) -> str | None:
        """The text from old line `line` (1-based) on; None when not text or no such line.
        Found from the old end back (the line is near it: where the last chunk starts)."""
        lines = self.data.count(b"\n", 0, self.old_size)
        if not 0 < line <= lines:
            return None
        end = self.old_size - 1  # the line break of old line `lines`
        for _ in range(lines - line + 1):
            end = self.data.rfind(b"\n", 0, end)  # the one before: -1 before line 1
        return decode_text(self.data[end + 1 :])


class SourceReader(Protocol):
    """One kind of source file: where it lives and what it holds."""

    @property
    def root(self) -> Path: ...

    @property
    def prefix(self) -> str:
        """Its files' key in the index: `prefix` + the path relative to `root`."""
        ...

    def wants(self, relative: str) -> bool: ...

    def allows(self, link: Path) -> bool:
        """Whether a symlinked file it wants may be read."""
        ...

    def sources(
        self, key: str, text: str | None, *, digest: str, mtime: float, chunker: Chunker
    ) -> list[SourceUpdate]:
        """The file's sources; `text` is None when the file is not text."""
        ...

    def grown(
        self,
        key: str,
        growth: Growth,
        *,
        digest: str,
        mtime: float,
        chunker: Chunker,
        last_line: LastLine,
    ) -> list[SourceUpdate] | None:
        """The updates that index only what was appended, as reading the whole file would
        (`sources` of the whole text), or None: read it whole."""
        ...


@dataclass(frozen=True)
class MarkdownSource:
    """Every `*.md` under `memory/` (MEMORY.md, daily notes, archive/, HISTORY*.md, chats/*/…,
    working/*.md): one source a file, cut into line-numbered chunks. A file that is not text is
    indexed as empty, so it is not re-read every sync. A daily note that grew is re-chunked
    from its last chunk on (its chunks are timed by its lines; any other file's follow its
    mtime, so they all change)."""

    root: Path
    prefix: str = ""

    def wants(self, relative: str) -> bool:
        return relative.endswith(".md") and not relative.startswith("sessions/")

    def allows(self, link: Path) -> bool:
        return scope_escape(link, self.root) is None

    def sources(
        self, key: str, text: str | None, *, digest: str, mtime: float, chunker: Chunker
    ) -> list[SourceUpdate]:
        chunks = chunker.file(key, text or "", mtime=mtime)
        return [SourceUpdate(source_of_file(key), tuple(chunks), digest=digest)]

    def grown(
        self,
        key: str,
        growth: Growth,
        *,
        digest: str,
        mtime: float,
        chunker: Chunker,
        last_line: LastLine,
    ) -> list[SourceUpdate] | None:
        source = source_of_file(key)
        line = last_line(source) if timed_by_text(key) else None
        text = growth.text_from(line) if line is not None else None
        if line is None or text is None:
            return None
        chunks = chunker.file_from(key, text, line=line, mtime=mtime)
        if chunks is None:
            return None
        return [SourceUpdate(source, tuple(chunks), digest=digest, from_line=line)]


@dataclass(frozen=True)
class ChangedFile:
    signature: FileSignature
    updates: tuple[SourceUpdate, ...]
    grown: bool = False  # the updates add to what the file held: an append

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(update.source for update in self.updates)


@dataclass(frozen=True)
class FileDelta:
    changed: tuple[ChangedFile, ...]  # new, changed or grown files, with their (new) sources
    touched: tuple[FileSignature, ...]  # same content, new mtime: re-record only
    removed: tuple[str, ...]  # file keys gone from disk
    unchanged: int
    skipped: tuple[str, ...]  # not text, or unreadable

    @property
    def paths(self) -> tuple[str, ...]:
        """The changed files' keys."""
        return tuple(changed.signature.path for changed in self.changed)

    @property
    def grown(self) -> tuple[str, ...]:
        """The keys of the files indexed as appends."""
        return tuple(changed.signature.path for changed in self.changed if changed.grown)


@dataclass(frozen=True)
class SourceFile:
    reader: SourceReader
    path: Path
    mtime_ns: int
    size: int
    allowed: bool  # False: a link its reader refuses, never read


def source_files(readers: Sequence[SourceReader]) -> dict[str, SourceFile]:
    """Every source file by its key: the walk."""
    found: dict[str, SourceFile] = {}
    for root, group in _by_root(readers).items():
        for relative, path, stat, linked in _walk(root):
            reader = next((r for r in group if r.wants(relative)), None)
            if reader is not None:
                found[reader.prefix + relative] = _source_file(reader, path, stat, linked)
    return found


def source_files_at(
    readers: Sequence[SourceReader], paths: Iterable[Path]
) -> tuple[dict[str, SourceFile], list[str]]:
    """The files at `paths` that the walk would find, by key; and the keys of all the paths a
    reader wants, found or not (one not found is gone)."""
    found: dict[str, SourceFile] = {}
    asked: list[str] = []
    for path in paths:
        located = _locate(readers, path)
        if located is None:
            continue
        reader, relative = located
        asked.append(reader.prefix + relative)
        if (file := _walked(reader, relative)) is not None:
            found[reader.prefix + relative] = file
    return found, asked


def _locate(readers: Sequence[SourceReader], path: Path) -> tuple[SourceReader, str] | None:
    """The reader that wants the file at `path`, and its path relative to that reader's root
    (strings, not `pathlib`: this runs for every file a turn wrote)."""
    given = os.fspath(path)
    for reader in readers:
        root = os.fspath(reader.root) + os.sep
        if not given.startswith(root):
            continue
        relative = given[len(root) :].replace(os.sep, "/")
        hidden = any(part.startswith(".") for part in relative.split("/"))
        if not hidden and reader.wants(relative):
            return reader, relative
    return None


def _walked(reader: SourceReader, relative: str) -> SourceFile | None:
    """The file as the walk sees it: none behind a linked folder, only a regular file."""
    root, parts = os.fspath(reader.root), relative.split("/")
    if any(os.path.islink(os.path.join(root, *parts[:depth])) for depth in range(1, len(parts))):
        return None
    path = reader.root / relative
    try:
        stat = path.stat()
    except OSError:
        return None
    return _source_file(reader, path, stat, path.is_symlink()) if S_ISREG(stat.st_mode) else None


def _source_file(
    reader: SourceReader, path: Path, stat: os.stat_result, linked: bool
) -> SourceFile:
    allowed = not linked or reader.allows(path)
    return SourceFile(reader, path, stat.st_mtime_ns, stat.st_size, allowed)


def _by_root(readers: Sequence[SourceReader]) -> dict[Path, list[SourceReader]]:
    grouped: dict[Path, list[SourceReader]] = {}
    for reader in readers:
        grouped.setdefault(reader.root, []).append(reader)
    return grouped


def _walk(root: Path) -> list[tuple[str, Path, os.stat_result, bool]]:
    """Every regular file under `root` (links followed to see it): (relative path, path, its
    stat, whether it is a link)."""
    found: list[tuple[str, Path, os.stat_result, bool]] = []
    if not root.is_dir():
        return found
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            if name.startswith("."):
                continue
            path = Path(folder, name)
            try:
                stat = path.stat()
            except OSError:
                continue
            if S_ISREG(stat.st_mode):
                found.append((path.relative_to(root).as_posix(), path, stat, path.is_symlink()))
    return found


def file_delta(
    files: Mapping[str, SourceFile],
    known: Mapping[str, FileSignature],
    chunker: Chunker,
    *,
    last_line: LastLine,
) -> FileDelta:
    """What changed in `files` since `known` (what the index recorded of them; a key known but
    not in `files` is gone)."""
    changed: list[ChangedFile] = []
    touched: list[FileSignature] = []
    skipped: list[str] = []
    unchanged = 0
    for key, file in sorted(files.items()):
        before = known.get(key)
        if not file.allowed:
            if before and before.sha256 == OUT_OF_SCOPE:
                unchanged += 1
            else:
                changed.append(_refused(key, file, chunker))
            continue
        if before and _unmoved(before, file):
            unchanged += 1
            continue
        found = _changed(key, file, before, chunker, last_line)
        if found is None:
            skipped.append(key)
        elif isinstance(found, FileSignature):
            touched.append(found)
        else:
            changed.append(found)
            skipped += [] if found.signature.text else [key]
    removed = tuple(sorted(set(known) - set(files)))
    return FileDelta(tuple(changed), tuple(touched), removed, unchanged, tuple(skipped))


def _unmoved(before: FileSignature, file: SourceFile) -> bool:
    """Read as it is now at the last sync (a link refused then was not read at all)."""
    moved = (before.mtime_ns, before.size) != (file.mtime_ns, file.size)
    return not moved and before.sha256 != OUT_OF_SCOPE


def _refused(key: str, file: SourceFile, chunker: Chunker) -> ChangedFile:
    """A link out of its scope, recorded without being read: no sources."""
    log.warning("index_file_out_of_scope", path=key)
    signature = FileSignature(key, file.mtime_ns, file.size, OUT_OF_SCOPE)
    updates = file.reader.sources(key, None, digest=OUT_OF_SCOPE, mtime=0.0, chunker=chunker)
    return ChangedFile(signature, tuple(updates))


def _changed(
    key: str,
    file: SourceFile,
    before: FileSignature | None,
    chunker: Chunker,
    last_line: LastLine,
) -> ChangedFile | FileSignature | None:
    """The file as read now: its new sources, only its new signature (same content), or None
    when it cannot be read."""
    data = _read(file.path, key)
    if data is None:
        return None
    grown_from = _grown_from(before, data)
    digest, old_digest = _digests(data, grown_from)
    signature = FileSignature(key, file.mtime_ns, len(data), digest)
    mtime = file.mtime_ns / 1e9
    if before is not None and digest == before.sha256:
        return replace(signature, text=before.text)
    if before is not None and grown_from and old_digest == before.sha256:
        growth = Growth(data, grown_from)
        updates = _grown(key, file.reader, growth, digest, mtime, chunker, last_line)
        if updates is not None:
            return ChangedFile(signature, tuple(updates), grown=True)
    text = decode_text(data)
    if text is None:
        log.warning("index_file_not_text", path=key, size=len(data))
    updates = file.reader.sources(key, text, digest=digest, mtime=mtime, chunker=chunker)
    return ChangedFile(replace(signature, text=text is not None), tuple(updates))


def _grown(
    key: str,
    reader: SourceReader,
    growth: Growth,
    digest: str,
    mtime: float,
    chunker: Chunker,
    last_line: LastLine,
) -> list[SourceUpdate] | None:
    """The reader's updates for an append, or None: read whole (it cannot, or the new bytes
    are not text: whether the whole file still is is a question for the whole file)."""
    if growth.added is None:
        return None
    return reader.grown(
        key, growth, digest=digest, mtime=mtime, chunker=chunker, last_line=last_line
    )


def _grown_from(before: FileSignature | None, data: bytes) -> int:
    """The old size, when the file may only have grown since `before` (it was text, ending
    with a whole line, and is larger now); else 0."""
    if before is None or not before.text or not 0 < before.size < len(data):
        return 0
    return before.size if data[before.size - 1 : before.size] == b"\n" else 0


def _digests(data: bytes, prefix: int) -> tuple[str, str]:
    """The sha256 of `data`, and of its first `prefix` bytes ("" when 0): one pass."""
    view = memoryview(data)
    hasher = hashlib.sha256(view[:prefix])
    old = hasher.hexdigest() if prefix else ""
    hasher.update(view[prefix:])
    return hasher.hexdigest(), old


def _read(path: Path, key: str) -> bytes | None:
    """The file's bytes, or None when unreadable."""
    try:
        return path.read_bytes()
    except OSError as exc:
        log.warning("index_file_unreadable", path=key, error=type(exc).__name__)
        return None


def digest_of(*parts: object) -> str:
    """A short digest of what a source was made from (so an unchanged source is not
    rewritten, nor re-embedded)."""
    joined = "\x1f".join(str(part) for part in parts)
    return hashlib.sha256(joined.encode("utf-8", errors="surrogateescape")).hexdigest()[:24]
