"""Structured items as index sources: each item of a JSONL file is one source, read from the file.

An item's source is its text, in its folder's scope ("" for the owner's global memory), at its
`updated_at`, with its salience, cited by its file relative to `memory/` with the id as a
fragment — `items/semantic.jsonl#s-1a2b3c4d5e` — so a hit names both where the item lives and
the id the memory tools take. Forgotten items are not indexed; nor are episodic "turn" items,
which are the exchanges the session files already give the index (one copy of each turn).
The index learns of a changed item the way it learns of any changed file: by a sync.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.index.chunking import Chunker
from bot.index.sources import scope_of
from bot.index.store import SourceUpdate
from bot.index.sync import digest_of
from bot.memory.items.format import ItemFormatError, decode
from bot.models import MemoryItem
from bot.storage.confined import scope_escape

log = structlog.get_logger(__name__)
KIND = "item"
SKIPPED_TYPES = frozenset({"turn"})


@dataclass(frozen=True)
class ItemSource:
    """The items' JSONL files under `memory/` (`items/…` and `chats/<key>/items/…`)."""

    root: Path
    prefix: str = ""

    def wants(self, relative: str) -> bool:
        parts = relative.split("/")
        return relative.endswith(".jsonl") and "items" in parts[:-1]

    def allows(self, link: Path) -> bool:
        return scope_escape(link, self.root) is None

    def sources(
        self, key: str, text: str | None, *, digest: str, mtime: float, chunker: Chunker
    ) -> list[SourceUpdate]:
        scope = scope_of(key)
        items = (_item(line, key) for line in (text or "").splitlines() if line.strip())
        return [_update(key, i, scope, chunker) for i in items if i is not None and _indexed(i)]


def _item(line: str, path: str) -> MemoryItem | None:
    try:
        return decode(line)
    except ItemFormatError:
        return None  # kept verbatim by the store, never indexed


def _indexed(item: MemoryItem) -> bool:
    return item.status != "forgotten" and item.type not in SKIPPED_TYPES


def _update(path: str, item: MemoryItem, scope: str, chunker: Chunker) -> SourceUpdate:
    cited = f"{path}#{item.id}"
    chunks = chunker.text(
        item.text,
        path=cited,
        scope=scope,
        kind=KIND,
        at=item.updated_at.timestamp(),
        salience=item.salience,
    )
    digest = digest_of(item.text, scope, item.salience, item.updated_at.isoformat())
    return SourceUpdate(f"item:{cited}", tuple(chunks), digest=digest)
