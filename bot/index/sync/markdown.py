"""The memory markdown as a source reader: one source a file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.index.chunking import Chunker
from bot.index.sources import source_of_file, timed_by_text
from bot.index.store import SourceUpdate
from bot.index.sync.reader import Appended
from bot.storage.confined import scope_escape


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

    def grown(self, key: str, appended: Appended) -> list[SourceUpdate] | None:
        source = source_of_file(key)
        line = appended.last_line(source) if timed_by_text(key) else None
        text = appended.growth.text_from(line) if line is not None else None
        if line is None or text is None:
            return None
        chunks = appended.chunker.file_from(key, text, line=line, mtime=appended.mtime)
        if chunks is None:
            return None
        return [SourceUpdate(source, tuple(chunks), digest=appended.digest, from_line=line)]
