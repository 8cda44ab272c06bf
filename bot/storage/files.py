"""Atomic, locked file I/O: the only way the bot writes to the workspace.

Writes go to a temp file in the same folder, are fsynced and swapped in with `os.replace`;
the folder is fsynced after. A symlink is followed, not replaced: the temp file goes beside the
file it points to, which is swapped in place (MEMORY.md linked into a synced folder stays a
link), and an existing file keeps its permissions. Appends are one `O_APPEND` write, so a line
a person appends meanwhile is never lost. Whether a file may be written at all (its scope,
its encoding) is decided before: `bot.storage.confined`, `bot.storage.textfile`.

Read-modify-write holds `FileLocks.hold(path)`: an asyncio lock within the process plus a
`filelock` on a sibling `.lock` file across processes (a separate file, because `os.replace`
swaps the inode). Folders are 0700, new files 0600.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import tempfile
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Protocol

import structlog
from filelock import FileLock, Timeout

DIR_MODE = 0o700
FILE_MODE = 0o600
log = structlog.get_logger(__name__)


def ensure_dir(path: Path) -> Path:
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    return path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    target = written_path(path)
    ensure_dir(target.parent)
    mode = _mode_of(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(target.parent)


def written_path(path: Path) -> Path:
    """The file a write to `path` changes: the end of its symlinks, else `path` itself."""
    return path.resolve() if path.is_symlink() else path


def _mode_of(path: Path) -> int:
    """An existing file's permissions (a person's choice), else `FILE_MODE`."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return FILE_MODE


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def append_text(path: Path, text: str, *, durable: bool = True) -> None:
    """Append-only files: one O_APPEND write; never rewrites content. Fsynced unless not
    `durable`: what is written every turn and held elsewhere too (a daily note line, a turn's
    items: the session keeps the exchange) skips the fsync, and survives a crash of the bot
    (the kernel has it), though perhaps not a crash of the machine."""
    ensure_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        os.write(fd, text.encode("utf-8"))
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_text(path: Path) -> str | None:
    """The file's text (undecodable bytes replaced), or None when it is missing or unreadable.

    An unreadable file (a folder in its place, no permission) is logged, never fatal: a turn
    goes on without it.
    """
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("file_unreadable", path=str(path), error=type(exc).__name__)
        return None


Signature = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns


def signature_of(stat: os.stat_result) -> Signature:
    """What tells a file's versions apart without reading it (an edit, a replacement): the
    key of every cache of what a file holds."""
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def fsync_path(path: Path) -> None:
    """Flush a file's (or a folder's) writes to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Locks(Protocol):
    """Per-path locks for read-modify-write: `FileLocks` (one host), or one shared by every
    replica (`bot.replicas.locks`)."""

    def hold(self, path: Path) -> AbstractAsyncContextManager[None]: ...


class FileLocks:
    """Per-path locks for read-modify-write, in-process and across processes.

    Lock files live in `lock_dir` (named by a hash of the path) when given, so folders people
    edit stay clean; without it, beside the file as `<name>.lock`.
    """

    def __init__(self, lock_dir: Path | None = None) -> None:
        self.lock_dir = lock_dir
        self._locks: dict[Path, asyncio.Lock] = {}
        self._lock_paths: dict[Path, Path] = {}

    @asynccontextmanager
    async def hold(self, path: Path) -> AsyncIterator[None]:
        lock = self._locks.setdefault(path, asyncio.Lock())
        async with lock:
            # released on the loop's thread, maybe acquired in a worker's: not thread-local
            file_lock = FileLock(str(self._lock_path(path)), thread_local=False)
            try:  # free unless another process holds it: taken at once, no thread
                file_lock.acquire(blocking=False)
            except Timeout:
                await asyncio.to_thread(file_lock.acquire)
            try:
                yield
            finally:
                file_lock.release()

    def _lock_path(self, path: Path) -> Path:
        """The lock file of `path` (its folder made): worked out once per path."""
        if (known := self._lock_paths.get(path)) is not None and known.parent.is_dir():
            return known
        if self.lock_dir is None:
            found = ensure_dir(path.parent) / f"{path.name}.lock"
        else:
            name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
            found = ensure_dir(self.lock_dir) / f"{name}.lock"
        self._lock_paths[path] = found
        return found
