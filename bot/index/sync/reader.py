"""What a source reader is: the `SourceReader` protocol (one kind of file under one root, its
text → sources), `Growth` and `Appended` (a file that only grew, for a reader that indexes
appends) and `digest_of` (what a source was made from)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Protocol

from bot.index.chunking import Chunker
from bot.index.store import SourceUpdate
from bot.storage.lines import decode_text

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


@dataclass(frozen=True)
class Appended:
    """A file that only grew, as its reader is handed it: the growth, what the whole file's
    source would be recorded with (its digest and mtime), the chunker, and where each source's
    last chunk starts in the index (`last_line`)."""

    growth: Growth
    digest: str
    mtime: float
    chunker: Chunker
    last_line: LastLine


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

    def grown(self, key: str, appended: Appended) -> list[SourceUpdate] | None:
        """The updates that index only what was appended, as reading the whole file would
        (`sources` of the whole text), or None: read it whole."""
        ...


def digest_of(*parts: object) -> str:
    """A short digest of what a source was made from (so an unchanged source is not
    rewritten, nor re-embedded)."""
    joined = "\x1f".join(str(part) for part in parts)
    return hashlib.sha256(joined.encode("utf-8", errors="surrogateescape")).hexdigest()[:24]
