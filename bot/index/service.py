"""`IndexService`: the search index as one of the app's services, and its blocking search.

The index is opened in a worker thread at start (an embedder and the vector cache take a moment
to load) and brought up to date with the source files (`sync_files`: a deleted `index/`
folder is rebuilt right here, from the memory files, the session files and the items). Until
then, after a failed open and after stop, `current` is None and `search` finds nothing: recall
is best-effort, and the bot answers without it. A `ConfigError` (a model folder that is not
one) is the exception: it stops the start, with its one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import structlog

from bot.errors import ConfigError
from bot.index.memory_index import MemoryIndex
from bot.index.search import Hit

log = structlog.get_logger(__name__)


class IndexService:
    def __init__(self, open_index: Callable[[], MemoryIndex] | None) -> None:
        """`open_index` None: recall is off (`rag.enabled = false`), nothing is ever opened."""
        self._open_index = open_index
        self._index: MemoryIndex | None = None

    @property
    def current(self) -> MemoryIndex | None:
        """The open index, or None (not started, failed to open, or stopped)."""
        return self._index

    async def start(self) -> None:
        if self._open_index is None:
            return
        try:
            self._index = await asyncio.to_thread(self.open)
        except ConfigError:
            raise
        except Exception:  # the service boundary: the bot runs on without recall
            log.warning("index_open_failed", exc_info=True)

    async def stop(self) -> None:
        index, self._index = self._index, None
        if index is not None:
            await asyncio.to_thread(_close, index)

    def open(self, *, sync: bool = True) -> MemoryIndex:
        """Open and sync the index (blocking); the caller closes it unless `start` did. A
        failed sync is logged: the index still answers from what it holds."""
        if self._open_index is None:
            raise RuntimeError("recall is off: there is no index to open")
        index = self._open_index()
        if not sync:
            return index
        try:
            report = index.sync_files()
        except Exception:
            log.warning("index_sync_failed", exc_info=True)
            return index
        log.info(
            "index_opened",
            indexed=len(report.indexed),
            removed=len(report.removed),
            unchanged=report.unchanged,
            seconds=round(report.seconds, 3),
        )
        return index

    async def sync(self) -> None:
        """Bring the open index up to date with the files (after a write outside a turn's
        system 55: a tool, a command, consolidation); best-effort, as recall is."""
        index = self._index
        if index is None:
            return
        try:
            await asyncio.to_thread(index.sync_files)
        except Exception:  # the index is derived: the next sync catches up
            log.warning("index_sync_failed", exc_info=True)

    async def scrub(self) -> None:
        """Sync, then leave no trace of removed text in the index's files (after a forget)."""
        index = self._index
        if index is None:
            return
        await self.sync()
        await asyncio.to_thread(index.scrub)

    def search(self, query: str, *, scopes: Sequence[str], k: int) -> list[Hit]:
        """The open index's best `k` hits within `scopes`, or [] when none is open. Blocking:
        call it through `asyncio.to_thread`."""
        index = self._index
        return [] if index is None else index.search(query, scopes=scopes, k=k)


def _close(index: MemoryIndex) -> None:
    index.close()
    close = getattr(index.embedder, "close", None)  # an HTTP client (`OpenAIEmbedder`)
    if callable(close):
        close()
