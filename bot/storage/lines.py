"""Memory files read as lines for the prompt, cheaply and defensively.

- Read fresh after any change (a hand edit included), not at all when nothing changed: parsed
  lines are cached by the file's stat signature (inode, size, mtime_ns, ctime_ns).
- A file that is not text (mostly NUL bytes or undecodable) is refused with a warning, and so
  is an unreadable one (no permission, a folder in its place). A stray NUL or other control
  character in a line of a text file is cleaned out of that line (`printable`); the rest of
  the file reads as usual and line numbers stay. Nothing here ever writes.
- A huge file is read only in a window, its head (MEMORY.md) or its tail (daily notes); the
  lines outside the window are counted, not parsed, so a caller can say what it left out.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import structlog

log = structlog.get_logger(__name__)

WINDOW_BYTES = 256 * 1024  # far more than a prompt budget of text
CACHE_ENTRIES = 512
NOT_TEXT_SHARE = 0.1  # above this share of undecodable characters a file is not text
_CHUNK = 1024 * 1024

Signature = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns
_ODD = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # control characters but tab and line ends


@dataclass(frozen=True)
class FileLines:
    lines: tuple[str, ...]  # leading and trailing blank lines dropped
    unread: int = 0  # lines outside the window that was read

    @property
    def total(self) -> int:
        """Non-blank lines read plus the lines left unread."""
        return sum(1 for line in self.lines if line.strip()) + self.unread


_warned: set[tuple[str, Path]] = set()


def warn_once(event: str, path: Path) -> None:
    """One warning per file and reason for the life of the process (reads repeat every turn)."""
    if (event, path) not in _warned:
        _warned.add((event, path))
        log.warning(event, path=str(path))


def decode_text(data: bytes) -> str | None:
    """The bytes as text (a stray bad byte replaced, control characters cleaned out), or None
    when they are not text."""
    text = data.decode("utf-8", errors="replace")
    if text.count("\ufffd") + text.count("\x00") > NOT_TEXT_SHARE * len(text):
        return None
    return printable(text)


def printable(text: str) -> str:
    """`text` without NUL and other control characters (tabs and line ends stay)."""
    return _ODD.sub("", text) if _ODD.search(text) else text


def safe_to_rewrite(path: Path) -> bool:
    """False when the file exists but is not text or cannot be read: leave such a file alone."""
    try:
        with path.open("rb") as handle:
            return decode_text(handle.read(WINDOW_BYTES)) is not None
    except FileNotFoundError:
        return True
    except OSError:
        return False


_Entry = tuple[Signature, FileLines | None]


class LineReader:
    """Reads files as `FileLines`, with the cache described above (safe across threads)."""

    def __init__(
        self,
        *,
        window_bytes: int = WINDOW_BYTES,
        entries: int = CACHE_ENTRIES,
        refuse: Callable[[Path], bool] = lambda _: False,  # `Workspace.strays`: not its to read
    ) -> None:
        self.window_bytes = window_bytes
        self.entries = entries
        self.refuse = refuse
        self._cache: OrderedDict[tuple[Path, bool], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def head(self, path: Path) -> FileLines | None:
        return self._read(path, from_end=False)

    def tail(self, path: Path) -> FileLines | None:
        return self._read(path, from_end=True)

    def _read(self, path: Path, *, from_end: bool) -> FileLines | None:
        if self.refuse(path):
            warn_once("memory_file_outside_its_scope", path)
            return None
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("memory_file_unreadable", path=str(path), error=type(exc).__name__)
            return None
        signature = (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        key = (path, from_end)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] == signature:
            return cached[1]
        lines = self._load(path, stat.st_size, from_end=from_end)
        self._remember(key, signature, lines)
        return lines

    def _load(self, path: Path, size: int, *, from_end: bool) -> FileLines | None:
        try:
            with path.open("rb") as handle:
                data, unread = _window(handle, size, self.window_bytes, from_end=from_end)
        except OSError as exc:
            log.warning("memory_file_unreadable", path=str(path), error=type(exc).__name__)
            return None
        text = decode_text(data)
        if text is None:
            log.warning("memory_file_not_text", path=str(path), size=size)
            return None
        return FileLines(lines=_trimmed(text.split("\n")), unread=unread)

    def _remember(
        self, key: tuple[Path, bool], signature: Signature, lines: FileLines | None
    ) -> None:
        with self._lock:
            self._cache[key] = (signature, lines)
            self._cache.move_to_end(key)
            while len(self._cache) > self.entries:
                self._cache.popitem(last=False)


def _window(handle: BinaryIO, size: int, window: int, *, from_end: bool) -> tuple[bytes, int]:
    """Whole lines from the head or the tail of the file, and how many lines lie outside."""
    if size <= window:
        return handle.read(), 0
    if from_end:
        handle.seek(size - window)
        data = handle.read(window)
        cut = data.find(b"\n") + 1  # the first line is partial: it starts before the window
        if cut == 0:
            return b"", _count_lines(handle, 0, size)
        return data[cut:], _count_lines(handle, 0, size - window + cut)
    data = handle.read(window)
    cut = data.rfind(b"\n") + 1  # the last line is partial: it ends after the window
    return data[:cut], _count_lines(handle, cut, size)


def _count_lines(handle: BinaryIO, start: int, end: int) -> int:
    """Lines in bytes [start, end): their newlines, plus an unterminated last one."""
    handle.seek(start)
    count, last = 0, b"\n"
    while start < end:
        chunk = handle.read(min(_CHUNK, end - start))
        if not chunk:
            break
        count += chunk.count(b"\n")
        last, start = chunk[-1:], start + len(chunk)
    return count + (last != b"\n")


def _trimmed(lines: list[str]) -> tuple[str, ...]:
    lines = [line.rstrip("\r") for line in lines]
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return tuple(lines[start:end])
