"""What changed in the source files since the index last saw them: (mtime_ns, size) first, then
sha256; a file that only grew handed to its reader as an append; a link refused recorded
unread (`OUT_OF_SCOPE`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace

import structlog

from bot.index.chunking import Chunker
from bot.index.store import FileSignature, SourceUpdate
from bot.index.sync.reader import Appended, Growth, LastLine, SourceReader
from bot.index.sync.walk import SourceFile
from bot.storage.lines import decode_text

log = structlog.get_logger(__name__)
OUT_OF_SCOPE = "out-of-scope"  # the digest of a link its reader refuses: never read


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
    data = _read(file, key)
    if data is None:
        return None
    grown_from = _grown_from(before, data)
    digest, old_digest = _digests(data, grown_from)
    signature = FileSignature(key, file.mtime_ns, len(data), digest)
    mtime = file.mtime_ns / 1e9
    if before is not None and digest == before.sha256:
        return replace(signature, text=before.text)
    if before is not None and grown_from and old_digest == before.sha256:
        appended = Appended(Growth(data, grown_from), digest, mtime, chunker, last_line)
        updates = _grown(key, file.reader, appended)
        if updates is not None:
            return ChangedFile(signature, tuple(updates), grown=True)
    text = decode_text(data)
    if text is None:
        log.warning("index_file_not_text", path=key, size=len(data))
    updates = file.reader.sources(key, text, digest=digest, mtime=mtime, chunker=chunker)
    return ChangedFile(replace(signature, text=text is not None), tuple(updates))


def _grown(key: str, reader: SourceReader, appended: Appended) -> list[SourceUpdate] | None:
    """The reader's updates for an append, or None: read whole (it cannot, or the new bytes
    are not text: whether the whole file still is is a question for the whole file)."""
    if appended.growth.added is None:
        return None
    return reader.grown(key, appended)


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


def _read(file: SourceFile, key: str) -> bytes | None:
    """The file's bytes, or None when unreadable (or gone since the walk)."""
    try:
        return file.documents.read(file.path)
    except OSError as exc:
        log.warning("index_file_unreadable", path=key, error=type(exc).__name__)
        return None
