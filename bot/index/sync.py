"""File sync: which memory files changed since the index last saw them, as chunk updates.

Every `*.md` under `memory/` is a source (MEMORY.md, daily notes, archive/, HISTORY*.md,
chats/*/…, working/*.md); hidden files and folders (temp files of atomic writes) are not. A file
is re-read only when its (mtime_ns, size) moved, and re-chunked only when its sha256 changed too
(a touched but identical file is just re-recorded). A file that is not text is indexed as
empty and remembered by its hash, so it is not re-read every sync. A file gone from disk loses
its chunks. Blocking.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.index.chunking import Chunker
from bot.index.sources import source_of_file
from bot.index.store import FileSignature, SourceUpdate
from bot.storage.lines import decode_text

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class FileDelta:
    updates: tuple[SourceUpdate, ...]  # changed or new files, with their new chunks
    touched: tuple[FileSignature, ...]  # same content, new mtime: re-record only
    removed: tuple[str, ...]  # paths gone from disk
    unchanged: int
    skipped: tuple[str, ...]  # not text, or unreadable


def memory_files(root: Path) -> dict[str, os.stat_result]:
    """Every markdown file under `root` by its POSIX path relative to it."""
    found: dict[str, os.stat_result] = {}
    if not root.is_dir():
        return found
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            if name.startswith(".") or not name.endswith(".md"):
                continue
            path = Path(folder, name)
            try:
                stat = path.stat()
            except OSError:
                continue
            found[path.relative_to(root).as_posix()] = stat
    return found


def file_delta(root: Path, known: Mapping[str, FileSignature], chunker: Chunker) -> FileDelta:
    on_disk = memory_files(root)
    updates: list[SourceUpdate] = []
    touched: list[FileSignature] = []
    skipped: list[str] = []
    unchanged = 0
    for path, stat in sorted(on_disk.items()):
        before = known.get(path)
        if before and (before.mtime_ns, before.size) == (stat.st_mtime_ns, stat.st_size):
            unchanged += 1
            continue
        read = _read(root / path, path, stat)
        if read is None:
            skipped.append(path)
            continue
        signature, text = read
        if before and before.sha256 == signature.sha256:
            touched.append(signature)
            continue
        if text is None:
            skipped.append(path)
        chunks = chunker.file(path, text or "", mtime=stat.st_mtime_ns / 1e9)
        updates.append(SourceUpdate(source_of_file(path), tuple(chunks), signature))
    removed = tuple(sorted(set(known) - set(on_disk)))
    return FileDelta(tuple(updates), tuple(touched), removed, unchanged, tuple(skipped))


def _read(path: Path, name: str, stat: os.stat_result) -> tuple[FileSignature, str | None] | None:
    """The file's signature and text (None when it is not text), or None when unreadable."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        log.warning("index_file_unreadable", path=name, error=type(exc).__name__)
        return None
    signature = FileSignature(name, stat.st_mtime_ns, len(data), hashlib.sha256(data).hexdigest())
    text = decode_text(data)
    if text is None:
        log.warning("index_file_not_text", path=name, size=len(data))
    return signature, text
