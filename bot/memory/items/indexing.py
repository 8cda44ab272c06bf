"""Structured items as index sources: each item of a JSONL file is one source, read from the file.

An item's source is its text, in its folder's scope ("" for the owner's global memory), at its
`updated_at`, with its salience, cited by its file relative to `memory/` with the id as a
fragment — `items/semantic.jsonl#s-1a2b3c4d5e` — so a hit names both where the item lives and
the id the memory tools take. Forgotten and retired items are not indexed (a superseded one is,
marked as such: history stays searchable); nor are episodic "turn" items,
which are the exchanges the session files already give the index (one copy of each turn).
The index learns of a changed item the way it learns of any changed file: by a sync.

An item's source depends on its file and its line alone. So a file that only grew (items
appended) gives the sources of its new lines alone (of two lines with one id the later one is
written either way), and a file rewritten (an item touched when the prompt showed it, updated,
forgotten) has only its changed lines parsed again (`ParsedLines`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from bot.index.chunking import Chunker
from bot.index.sources import scope_of
from bot.index.store import SourceUpdate
from bot.index.sync import Appended, digest_of
from bot.memory.items.format import ItemFormatError, decode, file_lines
from bot.memory.lines import marked
from bot.models import MemoryItem
from bot.storage.confined import scope_escape

log = structlog.get_logger(__name__)
KIND = "item"
SKIPPED_TYPES = frozenset({"turn"})
PARSED_FILES = 64  # files whose parsed lines are kept: today's, semantic, procedural, …


class ParsedLines:
    """Each items file's lines as last read, with the source each gave (None: none), for the
    files read last. Thread-safe."""

    def __init__(self, files: int = PARSED_FILES) -> None:
        self._files: OrderedDict[str, dict[str, SourceUpdate | None]] = OrderedDict()
        self._limit = files
        self._lock = threading.Lock()

    def sources(
        self,
        key: str,
        lines: Sequence[str],
        parse: Callable[[str], SourceUpdate | None],
        *,
        added: bool,
    ) -> list[SourceUpdate]:
        """The sources of `lines` in order, each line parsed unless known: the file's lines
        are now these (or, `added`, its known ones and these)."""
        with self._lock:
            known = self._files.pop(key, {})
            now = known if added else {}
            for line in lines:
                if line not in now:
                    now[line] = known[line] if line in known else parse(line)
            self._files[key] = now
            while len(self._files) > self._limit:
                self._files.popitem(last=False)
            return [update for line in lines if (update := now[line]) is not None]


@dataclass(frozen=True)
class ItemSource:
    """The items' JSONL files under `memory/` (`items/…` and `chats/<key>/items/…`)."""

    root: Path
    prefix: str = ""
    parsed: ParsedLines = field(default_factory=ParsedLines, compare=False, repr=False)

    def wants(self, relative: str) -> bool:
        parts = relative.split("/")
        return relative.endswith(".jsonl") and "items" in parts[:-1]

    def allows(self, link: Path) -> bool:
        return scope_escape(link, self.root) is None

    def sources(
        self, key: str, text: str | None, *, digest: str, mtime: float, chunker: Chunker
    ) -> list[SourceUpdate]:
        return self._sources(key, text or "", chunker, added=False)

    def _sources(self, key: str, text: str, chunker: Chunker, *, added: bool) -> list[SourceUpdate]:
        scope = scope_of(key)
        lines = [line for line in file_lines(text) if line.strip()]  # not at U+2028
        return self.parsed.sources(
            key, lines, lambda line: _source(key, line, scope, chunker), added=added
        )

    def grown(self, key: str, appended: Appended) -> list[SourceUpdate] | None:
        added = appended.growth.added
        if added is None:
            return None
        return self._sources(key, added, appended.chunker, added=True)


def _source(path: str, line: str, scope: str, chunker: Chunker) -> SourceUpdate | None:
    """The line's source: None for a line that is not an item, or an item not indexed."""
    try:
        item = decode(line)
    except ItemFormatError:
        return None  # kept verbatim by the store, never indexed
    return _update(path, item, scope, chunker) if _indexed(item) else None


def _indexed(item: MemoryItem) -> bool:
    return item.status not in ("forgotten", "retired") and item.type not in SKIPPED_TYPES


def _text(item: MemoryItem) -> str:
    """What a search finds: a superseded item says so, with the day it stopped being true."""
    return marked(item.text, item.updated_at.date()) if item.status == "superseded" else item.text


def _update(path: str, item: MemoryItem, scope: str, chunker: Chunker) -> SourceUpdate:
    cited = f"{path}#{item.id}"
    chunks = chunker.text(
        _text(item),
        path=cited,
        scope=scope,
        kind=KIND,
        at=item.updated_at.timestamp(),
        salience=item.salience,
    )
    digest = digest_of(_text(item), scope, item.salience, item.updated_at.isoformat())
    return SourceUpdate(f"item:{cited}", tuple(chunks), digest=digest)
