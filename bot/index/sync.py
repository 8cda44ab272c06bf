"""File sync: which source files changed since the index last saw them, as source updates.

The index holds nothing that is not in a file. Each `SourceReader` owns one kind of file under
one root and turns a file's text into sources (`SourceUpdate`, each with a digest of what it was
made from): the memory markdown (`MarkdownSource`, one source a file), the session files
(`bot.index.transcripts`: one source an exchange) and the structured items' JSONL
(`bot.memory.items.indexing`: one source an item). A root is walked once; hidden files and
folders (temp files of atomic writes) are not sources, nor is anything but a regular file. A
file is re-read only when its (mtime_ns, size) moved, and re-parsed only when its sha256 changed
too (a touched but identical file is just re-recorded). A file gone from disk gives up its
sources. Blocking.

A symlink is a source only where its reader `allows` it (for memory files, the path rule of
`bot.storage.confined`: a chat's link must stay in that chat's folder). A link refused is never
read: it is recorded with the digest `OUT_OF_SCOPE` and no sources (so what it held before goes,
with one warning), and judged again at every sync. The walk never enters a linked folder.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Protocol

import structlog

from bot.index.chunking import Chunker
from bot.index.sources import source_of_file
from bot.index.store import FileSignature, SourceUpdate
from bot.storage.confined import scope_escape
from bot.storage.lines import decode_text

log = structlog.get_logger(__name__)
OUT_OF_SCOPE = "out-of-scope"  # the digest of a link its reader refuses: never read


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


@dataclass(frozen=True)
class MarkdownSource:
    """Every `*.md` under `memory/` (MEMORY.md, daily notes, archive/, HISTORY*.md, chats/*/…,
    working/*.md): one source a file, cut into line-numbered chunks. A file that is not text is
    indexed as empty, so it is not re-read every sync."""

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


@dataclass(frozen=True)
class ChangedFile:
    signature: FileSignature
    updates: tuple[SourceUpdate, ...]

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(update.source for update in self.updates)


@dataclass(frozen=True)
class FileDelta:
    changed: tuple[ChangedFile, ...]  # new or changed files, with their sources now
    touched: tuple[FileSignature, ...]  # same content, new mtime: re-record only
    removed: tuple[str, ...]  # file keys gone from disk
    unchanged: int
    skipped: tuple[str, ...]  # not text, or unreadable

    @property
    def paths(self) -> tuple[str, ...]:
        """The changed files' keys."""
        return tuple(changed.signature.path for changed in self.changed)


@dataclass(frozen=True)
class SourceFile:
    reader: SourceReader
    path: Path
    mtime_ns: int
    size: int
    allowed: bool  # False: a link its reader refuses, never read


def source_files(readers: Sequence[SourceReader]) -> dict[str, SourceFile]:
    """Every source file by its key."""
    found: dict[str, SourceFile] = {}
    for root, group in _by_root(readers).items():
        for relative, path, stat, linked in _walk(root):
            reader = next((r for r in group if r.wants(relative)), None)
            if reader is not None:
                allowed = not linked or reader.allows(path)
                found[reader.prefix + relative] = SourceFile(
                    reader, path, stat.st_mtime_ns, stat.st_size, allowed
                )
    return found


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
    readers: Sequence[SourceReader], known: Mapping[str, FileSignature], chunker: Chunker
) -> FileDelta:
    on_disk = source_files(readers)
    changed: list[ChangedFile] = []
    touched: list[FileSignature] = []
    skipped: list[str] = []
    unchanged = 0
    for key, file in sorted(on_disk.items()):
        reader, path, mtime_ns = file.reader, file.path, file.mtime_ns
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
        read = _read(path, key, mtime_ns)
        if read is None:
            skipped.append(key)
            continue
        signature, text = read
        if before and before.sha256 == signature.sha256:
            touched.append(signature)
            continue
        if text is None:
            skipped.append(key)
        updates = reader.sources(
            key, text, digest=signature.sha256, mtime=mtime_ns / 1e9, chunker=chunker
        )
        changed.append(ChangedFile(signature, tuple(updates)))
    removed = tuple(sorted(set(known) - set(on_disk)))
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


def _read(path: Path, key: str, mtime_ns: int) -> tuple[FileSignature, str | None] | None:
    """The file's signature and text (None when it is not text), or None when unreadable."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        log.warning("index_file_unreadable", path=key, error=type(exc).__name__)
        return None
    signature = FileSignature(key, mtime_ns, len(data), hashlib.sha256(data).hexdigest())
    text = decode_text(data)
    if text is None:
        log.warning("index_file_not_text", path=key, size=len(data))
    return signature, text


def digest_of(*parts: object) -> str:
    """A short digest of what a source was made from (so an unchanged source is not
    rewritten, nor re-embedded)."""
    joined = "\x1f".join(str(part) for part in parts)
    return hashlib.sha256(joined.encode("utf-8", errors="surrogateescape")).hexdigest()[:24]
