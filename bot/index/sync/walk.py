"""Which files are sources: the walk of every reader's root, or the files at given paths as
the walk would find them (hidden files and folders, linked folders and anything but a regular
file are not sources; a link its reader refuses is found, but marked not `allowed`).

Walked on this disk, or, when the workspace's documents are shared by replicas (anything but
`ON_DISK`), through them: each replica's index is then its own, made from the shared documents
(their versions stand for the mtime and size a file's stat gives), and a walk brings it up to
date with what another replica wrote."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

from bot.index.sync.reader import SourceReader
from bot.storage.files import ON_DISK, Documents


@dataclass(frozen=True)
class SourceFile:
    reader: SourceReader
    path: Path
    mtime_ns: int
    size: int
    allowed: bool  # False: a link its reader refuses, never read
    documents: Documents = ON_DISK  # where it is read from


def source_files(
    readers: Sequence[SourceReader], documents: Documents = ON_DISK
) -> dict[str, SourceFile]:
    """Every source file by its key: the walk."""
    if documents is not ON_DISK:
        return _documents(readers, documents)
    found: dict[str, SourceFile] = {}
    for root, group in _by_root(readers).items():
        for relative, path, stat, linked in _walk(root):
            reader = next((r for r in group if r.wants(relative)), None)
            if reader is not None:
                found[reader.prefix + relative] = _source_file(reader, path, stat, linked)
    return found


def source_files_at(
    readers: Sequence[SourceReader], paths: Iterable[Path], documents: Documents = ON_DISK
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
        if documents is not ON_DISK:
            file = _document(reader, reader.root / relative, documents)
        else:
            file = _walked(reader, relative)
        if file is not None:
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


def _documents(readers: Sequence[SourceReader], documents: Documents) -> dict[str, SourceFile]:
    """The walk, through the workspace's documents."""
    found: dict[str, SourceFile] = {}
    for root, group in _by_root(readers).items():
        for path in documents.walk(root):
            relative = path.relative_to(root).as_posix()
            if any(part.startswith(".") for part in relative.split("/")):
                continue
            reader = next((r for r in group if r.wants(relative)), None)
            if reader is not None and (file := _document(reader, path, documents)) is not None:
                found[reader.prefix + relative] = file
    return found


def _document(reader: SourceReader, path: Path, documents: Documents) -> SourceFile | None:
    try:
        version = documents.version(path)
    except OSError:
        return None
    if version is None:
        return None
    return SourceFile(reader, path, version[2], version[1], True, documents)


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
