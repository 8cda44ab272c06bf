"""Atomic, locked file I/O: the only way the bot writes to the workspace.

Writes go to a temp file in the same folder, are fsynced and swapped in with `os.replace`;
the folder is fsynced after. A symlink is followed, not replaced: the temp file goes beside the
file it points to, which is swapped in place (MEMORY.md linked into a synced folder stays a
link), and an existing file keeps its permissions. Appends are one `O_APPEND` write, so a line
a person appends meanwhile is never lost. Whether a file may be written at all (its scope,
its encoding) is decided before: `bot.storage.confined`, `bot.storage.textfile`.

Read-modify-write holds `FileLocks.hold(path)`: an asyncio lock within the process plus, across
processes, a byte-range lock on one lock file for them all (a separate file, because `os.replace`
swaps the inode). Folders are 0700, new files 0600.

Documents: where the workspace's files are kept. Every store reads, writes, appends, lists,
moves and deletes its files through `Workspace.documents`, a `Documents`, picked once in the
composition root (`bot.app.store`): `FileDocuments`, the files on this disk (the default, the
functions above), or with replicas `bot.replicas.shared_documents.SplitDocuments`: the shared
ones in one table (`PgDocuments`), the rest on the replica's disk. A document is named by its
path; the table keys it by the path relative to the workspace, so a folder exported from it
(`python -m bot memory export`) is the one the embedded mode keeps. Bytes, not text: what a
person's file holds is theirs, and the rules on its encoding stay above the seam
(`bot.storage.textfile`, `bot.storage.lines`). A document's `Signature` is its version: a
file's stat, or `(0, size, updated_at, version)` for a row whose version a database sequence
bumps at every change. Caches key on it, so a change made by any replica is read again.
`write_if` writes only over the version the writer read (a person's edit made meanwhile is
refused, not overwritten). Locks stay `Locks`: the protocol does not lock, its
read-modify-writes are the callers' under `hold(path)`.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import os
import stat
import struct
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import BinaryIO, Protocol

import structlog
from filelock import FileLock, Timeout

DIR_MODE = 0o700
FILE_MODE = 0o600
log = structlog.get_logger(__name__)


def ensure_dir(path: Path) -> Path:
    """`path` made a folder, with each missing folder on the way 0700 (`mkdir(parents=True)`
    makes the parents with the default mode: a workspace root was 0755)."""
    missing: list[Path] = []
    folder = path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
    if not path.is_dir():
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)  # raises what is wrong
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
    append_bytes(path, text.encode("utf-8"), durable=durable)


def append_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """`append_text`'s one write, of bytes."""
    ensure_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        os.write(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def temporary(path: Path) -> bool:
    """A writer's temporary file (`atomic_write_bytes`'s `.<name>.<random>.tmp`)."""
    return path.name.startswith(".") and path.name.endswith(".tmp")


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

    Across processes a path is one byte of one lock file, at an offset hashed from the path:
    `lock_dir/paths.lock` when `lock_dir` is given (one file, out of the folders people edit),
    else `<name>.lock` beside the file. The byte is an open-file-description lock (Linux): each
    `FileLocks` excludes every other, in this process or another, and a descriptor closed
    elsewhere releases nothing. Within one `FileLocks`, an asyncio lock per path comes first;
    paths whose bytes coincide (`slots` bounds the offsets) share the byte, counted, so holding
    both at once neither waits for itself nor lets go early. Where the system has no such locks,
    one `filelock` file per path.
    """

    def __init__(self, lock_dir: Path | None = None, *, slots: int = 1 << 62) -> None:
        self.lock_dir = lock_dir
        self.slots = slots
        self._locks: dict[Path, asyncio.Lock] = {}
        self._bytes: dict[Path, tuple[Path, int]] = {}
        self._held: dict[tuple[Path, int], int] = {}  # byte -> how many paths hold it here
        self._fds: dict[Path, int] = {}

    @asynccontextmanager
    async def hold(self, path: Path) -> AsyncIterator[None]:
        lock = self._locks.setdefault(path, asyncio.Lock())
        async with lock:
            if not _RANGE_LOCKS:
                async with _one_file_per_path(self._lock_file(path, shared=False)):
                    yield
                return
            byte = self._byte_of(path)
            delay = 0.002
            while not self._take(byte):  # another process (or `FileLocks`) holds it: poll
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
            try:
                yield
            finally:
                self._give(byte)

    def _take(self, byte: tuple[Path, int]) -> bool:
        held = self._held.get(byte, 0)
        if not held and not _lock_range(self._fd(byte[0]), fcntl.F_WRLCK, byte[1]):
            return False
        self._held[byte] = held + 1
        return True

    def _give(self, byte: tuple[Path, int]) -> None:
        if left := self._held.pop(byte) - 1:
            self._held[byte] = left
        else:
            _lock_range(self._fds[byte[0]], fcntl.F_UNLCK, byte[1])

    def _byte_of(self, path: Path) -> tuple[Path, int]:
        if (known := self._bytes.get(path)) is None:
            digest = hashlib.sha256(str(path.resolve()).encode()).digest()
            offset = int.from_bytes(digest[:8], "big") % self.slots
            known = (self._lock_file(path, shared=True), offset)
            self._bytes[path] = known
        return known

    def _lock_file(self, path: Path, *, shared: bool) -> Path:
        if self.lock_dir is None:
            return path.parent / f"{path.name}.lock"
        if shared:
            return self.lock_dir / "paths.lock"
        digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
        return self.lock_dir / f"{digest}.lock"

    def _fd(self, file: Path) -> int:
        """The open lock file; opened again when it was deleted or replaced while nothing
        here held a byte of it (an old one would exclude nobody)."""
        fd = self._fds.get(file)
        if fd is not None and not any(held == file for held, _ in self._held):
            try:
                current = file.stat().st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if not current:
                os.close(self._fds.pop(file))
                fd = None
        if fd is None:
            ensure_dir(file.parent)
            fd = self._fds[file] = os.open(file, os.O_RDWR | os.O_CREAT, FILE_MODE)
        return fd

    def __del__(self) -> None:  # its locks go with it, as a process's do when it ends
        for fd in getattr(self, "_fds", {}).values():
            os.close(fd)


_RANGE_LOCKS = sys.platform == "linux" and struct.calcsize("P") == 8


def _lock_range(fd: int, kind: int, offset: int) -> bool:
    """Lock (or unlock) one byte of `fd` as its open file description, without waiting:
    False when another one holds it. `struct flock` as 64-bit Linux lays it out."""
    request = struct.pack("hhqqi4x", kind, os.SEEK_SET, offset, 1, 0)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, request)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


@asynccontextmanager
async def _one_file_per_path(lock_file: Path) -> AsyncIterator[None]:
    ensure_dir(lock_file.parent)
    # released on the loop's thread, maybe acquired in a worker's: not thread-local
    file_lock = FileLock(str(lock_file), thread_local=False)
    try:  # free unless another process holds it: taken at once, no thread
        file_lock.acquire(blocking=False)
    except Timeout:
        await asyncio.to_thread(file_lock.acquire)
    try:
        yield
    finally:
        file_lock.release()


class Documents(Protocol):
    """The workspace's documents, by path (see the module's docstring)."""

    def version(self, path: Path) -> Signature | None:
        """The document's version; None when there is none."""
        ...

    def read(self, path: Path) -> bytes | None:
        """The document's bytes; None when there is none (`OSError` when it cannot be read)."""
        ...

    def open(self, path: Path) -> BinaryIO:
        """The document to read from, in part (`FileNotFoundError` when there is none)."""
        ...

    def write(self, path: Path, data: bytes) -> None:
        """Replace the document (or make it) in one step."""
        ...

    def write_if(self, path: Path, data: bytes, expected: Signature | None) -> bool:
        """`write`, only while the document's version is `expected` (None: while there is no
        document); False, nothing written, when it changed meanwhile."""
        ...

    def append(self, path: Path, data: bytes, *, durable: bool = True) -> None:
        """Add `data` at the document's end in one step (made when missing)."""
        ...

    def listing(self, folder: Path, pattern: str) -> list[Path]:
        """The documents in `folder` whose paths from it match `pattern` (a glob; each `/` a
        folder deeper: `*/reminders.jsonl` is each subfolder's), sorted."""
        ...

    def walk(self, folder: Path) -> list[Path]:
        """Every document under `folder`, at any depth, sorted (no writer's temporary file)."""
        ...

    def move(self, source: Path, target: Path) -> None:
        """Give the document `source` the path `target` (which is free)."""
        ...

    def delete(self, path: Path) -> None:
        """Remove the document (nothing when there is none)."""
        ...


class FileDocuments:
    """The documents as the files on this disk (the embedded mode's). It keeps nothing: one
    serves every workspace (`ON_DISK`)."""

    def version(self, path: Path) -> Signature | None:
        try:
            return signature_of(os.stat(path))
        except FileNotFoundError:
            return None

    def read(self, path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None

    def open(self, path: Path) -> BinaryIO:
        return path.open("rb")

    def write(self, path: Path, data: bytes) -> None:
        atomic_write_bytes(path, data)

    def write_if(self, path: Path, data: bytes, expected: Signature | None) -> bool:
        if self.version(path) != expected:
            return False
        atomic_write_bytes(path, data)
        return True

    def append(self, path: Path, data: bytes, *, durable: bool = True) -> None:
        append_bytes(path, data, durable=durable)

    def listing(self, folder: Path, pattern: str) -> list[Path]:
        return sorted(folder.glob(pattern))

    def walk(self, folder: Path) -> list[Path]:
        return sorted(p for p in folder.rglob("*") if p.is_file() and not temporary(p))

    def move(self, source: Path, target: Path) -> None:
        ensure_dir(target.parent)
        os.replace(source, target)

    def delete(self, path: Path) -> None:
        path.unlink(missing_ok=True)


ON_DISK = FileDocuments()
