"""Memory files read as lines for the prompt, cheaply and defensively.

- Read fresh after any change (a hand edit included), not at all when nothing changed: parsed
  lines are cached by the file's signature (its stat: inode, size, mtime_ns, ctime_ns; or its
  version, when the documents are shared: `bot.storage.files.Documents`).
- A file that is not text (mostly undecodable bytes or control characters: binary, UTF-16) is
  refused with a warning, and so is an unreadable one (no permission, a folder in its place)
  and one that leads out of its scope's folder (`bot.storage.confined`). Nothing here ever
  writes.
- Odd control characters (NUL, escape …; not tab) in a few lines never hide the file: they
  are taken out of the lines that hold them, and those lines counted in one warning. The same
  rule cleans the text the bot writes into notes (`without_controls`).
- A huge file is read only in a window, its head (MEMORY.md) or its tail (daily notes); the
  lines outside the window are counted, not parsed, so a caller can say what it left out.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import structlog

from bot.storage.confined import inside_scope
from bot.storage.files import ON_DISK, Documents, Signature

log = structlog.get_logger(__name__)

WINDOW_BYTES = 64 * 1024  # ~16k tokens: more than any part of `# Memory` shows, read every turn
CACHE_ENTRIES = 512
NOT_TEXT_SHARE = 0.1  # above this share of undecodable or control characters, not text
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # all but tab, \n and \r
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class FileLines:
    lines: tuple[str, ...]  # leading and trailing blank lines dropped
    unread: int = 0  # lines outside the window that was read

    @property
    def total(self) -> int:
        """Non-blank lines read plus the lines left unread."""
        return sum(1 for line in self.lines if line.strip()) + self.unread


@dataclass(frozen=True)
class Decoded:
    text: str  # without control characters
    cleaned: int  # lines that held some


def decoded(data: bytes) -> Decoded | None:
    """The bytes as text (a stray bad byte replaced, control characters taken out), or None
    when they are not text."""
    text = data.decode("utf-8", errors="replace")
    odd = text.count("\ufffd") + len(CONTROL.findall(text))
    if odd > NOT_TEXT_SHARE * len(text):
        return None
    if odd == text.count("\ufffd"):
        return Decoded(text, 0)
    cleaned = sum(1 for line in text.split("\n") if CONTROL.search(line))
    return Decoded(without_controls(text), cleaned)


def decode_text(data: bytes) -> str | None:
    """`decoded`'s text, or None when the bytes are not text."""
    found = decoded(data)
    return None if found is None else found.text


def without_controls(text: str) -> str:
    """The text without control characters but tab and line breaks."""
    return CONTROL.sub("", text)


def safe_to_rewrite(path: Path, documents: Documents = ON_DISK) -> bool:
    """False when the file exists but is not text or cannot be read: leave such a file alone."""
    try:
        with documents.open(path) as handle:
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
        memory_root: Path | None = None,  # given: files out of their scope are refused
        window_bytes: int = WINDOW_BYTES,
        entries: int = CACHE_ENTRIES,
        documents: Documents = ON_DISK,
    ) -> None:
        self.memory_root = memory_root
        self.documents = documents
        self.window_bytes = window_bytes
        self.entries = entries
        self._cache: OrderedDict[tuple[Path, bool], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def head(self, path: Path) -> FileLines | None:
        return self._read(path, from_end=False)

    def tail(self, path: Path) -> FileLines | None:
        return self._read(path, from_end=True)

    def _read(self, path: Path, *, from_end: bool) -> FileLines | None:
        try:
            signature = self.documents.version(path)
        except OSError as exc:
            log.warning("memory_file_unreadable", path=str(path), error=type(exc).__name__)
            return None
        if signature is None:
            return None
        key = (path, from_end)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] == signature:
            return cached[1]
        lines = self._load(path, signature[1], from_end=from_end)
        self._remember(key, signature, lines)
        return lines

    def _load(self, path: Path, size: int, *, from_end: bool) -> FileLines | None:
        if self.memory_root is not None and not inside_scope(path, self.memory_root):
            return None
        try:
            with self.documents.open(path) as handle:
                data, unread = _window(handle, size, self.window_bytes, from_end=from_end)
        except OSError as exc:
            log.warning("memory_file_unreadable", path=str(path), error=type(exc).__name__)
            return None
        found = decoded(data)
        if found is None:
            log.warning("memory_file_not_text", path=str(path), size=size)
            return None
        if found.cleaned:
            log.warning("memory_file_control_characters", path=str(path), lines=found.cleaned)
        return FileLines(lines=_trimmed(found.text.split("\n")), unread=unread)

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
