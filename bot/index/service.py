"""`IndexService`: the search index as one of the app's services — opened at start, kept in step
with the files by one background syncer, searched (blocking).

The index is opened in a worker thread at start (an embedder and the vector cache take a moment
to load) and brought up to date with the source files (`sync_files`, the walk: a deleted
`index/` folder is rebuilt right here, from the memory files, the session files and the items);
with `catch_up_at_start` off (replicas: a replica answers before it walks the shared documents)
that first walk is the syncer's first batch, run after `start` returned.
Until then, after a failed open and after stop, `current` is None and `search` finds nothing:
recall is best-effort, and the bot answers without it. A `ConfigError` (a model folder that is
not one) is the exception: it stops the start, with its one line.

Then one task, the syncer, runs every sync, one at a time, in its own thread:

- `request(paths)`: the files a turn wrote (system 55), synced after the turn, never awaited by
  it. Requests coalesce: while one sync runs, the next waits as one batch, its paths merged;
  and a batch of them waits `gather_seconds` for more before it runs, so a burst of turns
  (a busy group, many chats) is synced once, not once a turn, and a sync does not run beside
  the next turn's own work. Anything that waits for a batch (`sync`, `settle`, `stop`)
  starts it at once.
- `sync()`: a walk, awaited (after a write outside a turn: a command, a tool, consolidation).
- a walk of its own every `catch_up_seconds`, so a hand edit anywhere is indexed within that
  (a turn's search does not wait for it: it may take a while over many files, and over the
  shared documents of replicas).
- `settle()`: wait until everything asked for so far is synced. `search`, called from a thread,
  settles first, so a search sees every write asked for before it (on the event loop's own
  thread it cannot wait: `await settle()` there first).

A failed sync is logged (the index is derived: the next sync catches up, its paths carried
into it). `stop` lets the syncer finish what was asked, then closes the index.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import structlog

from bot.errors import ConfigError
from bot.index.memory_index import MemoryIndex, SyncReport
from bot.index.search import Hit, Wait

log = structlog.get_logger(__name__)

CATCH_UP_SECONDS = 60.0  # a walk at least this often: hand edits outside a turn's files
GATHER_SECONDS = 0.5  # a turn's files wait this long for the next turns' (see above)
SETTLE_SECONDS = 10.0  # the longest a search waits for the syncs asked for before it


@dataclass
class _Batch:
    """Syncs asked for and not begun yet: merged until the syncer takes them."""

    paths: set[Path] = field(default_factory=set)
    walk: bool = False
    own: bool = False  # the walk is the syncer's own catch-up: no search waits for it
    done: asyncio.Event = field(default_factory=asyncio.Event)


class IndexService:
    def __init__(
        self,
        open_index: Callable[[], MemoryIndex] | None,
        *,
        catch_up_seconds: float = CATCH_UP_SECONDS,
        gather_seconds: float = GATHER_SECONDS,
        catch_up_at_start: bool = True,  # False: the first walk runs after `start` returned
    ) -> None:
        """`open_index` None: recall is off (`rag.enabled = false`), nothing is ever opened."""
        self._open_index = open_index
        self.catch_up_at_start = catch_up_at_start
        self.catch_up_seconds = catch_up_seconds
        self.gather_seconds = gather_seconds
        self._index: MemoryIndex | None = None
        self._syncer: asyncio.Task[None] | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: _Batch | None = None
        self._running: _Batch | None = None
        self._carried: set[Path] = set()  # the paths of a failed sync: tried again by the next
        self._wake = asyncio.Event()
        self._hurry = asyncio.Event()  # someone waits for the pending batch: no gathering
        self._stopping = False

    @property
    def current(self) -> MemoryIndex | None:
        """The open index, or None (not started, failed to open, or stopped)."""
        return self._index

    async def start(self) -> None:
        if self._open_index is None:
            return
        try:
            self._index = await asyncio.to_thread(self.open, sync=self.catch_up_at_start)
        except ConfigError:
            raise
        except Exception:  # the service boundary: the bot runs on without recall
            log.warning("index_open_failed", exc_info=True)
            return
        self._loop, self._stopping = asyncio.get_running_loop(), False
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-sync")
        self._syncer = asyncio.create_task(self._sync_loop(self._index), name="index-sync")

    async def stop(self) -> None:
        """Finish the syncs asked for, then close the index."""
        syncer, self._syncer = self._syncer, None
        if syncer is not None:
            self._stopping = True
            self._wake.set()
            self._hurry.set()
            await syncer
        thread, self._thread = self._thread, None
        if thread is not None:
            await asyncio.to_thread(thread.shutdown, wait=True)
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

    # ------------------------------------------------------------------ asking for syncs

    def request(self, paths: Iterable[Path] = (), *, walk: bool = False) -> None:
        """Have the files at `paths` synced (or every file: `walk`) soon, without waiting."""
        batch = self._batch()
        if batch is not None:
            batch.paths.update(paths)
            batch.walk |= walk

    async def sync(self) -> None:
        """Bring the open index up to date with every file and wait for it (after a write
        outside a turn: a tool, a command, consolidation); best-effort, as recall is."""
        batch = self._batch()
        if batch is not None:
            batch.walk, batch.own = True, False
            self._hurry.set()
            await batch.done.wait()

    async def settle(self, *, walks_only: bool = False) -> None:
        """Wait until every sync asked for so far has run (or every walk asked for: not the
        syncer's own catch-up, which a search need not wait for)."""
        for batch in [b for b in (self._running, self._pending) if b is not None]:
            if (batch.walk and not batch.own) or not walks_only:
                self._hurry.set()
                await batch.done.wait()

    async def scrub(self) -> None:
        """Sync, then leave no trace of removed text in the index's files (after a forget)."""
        index = self._index
        if index is None:
            return
        await self.sync()
        await asyncio.to_thread(index.scrub)

    def _batch(self) -> _Batch | None:
        """The batch the next sync will run (None when no syncer runs: nothing to sync)."""
        if self._syncer is None:
            return None
        if self._pending is None:
            self._pending = _Batch()
        self._wake.set()
        return self._pending

    # ------------------------------------------------------------------ the syncer

    async def _sync_loop(self, index: MemoryIndex) -> None:
        # `open` just walked, or the first walk is due now
        walked = time.monotonic() if self.catch_up_at_start else -self.catch_up_seconds
        while (batch := await self._next(walked)) is not None:
            self._running = batch
            try:
                await self._run(index, batch)
            finally:
                self._running = None
                batch.done.set()
            if batch.walk:
                walked = time.monotonic()

    async def _next(self, walked: float) -> _Batch | None:
        """The next batch: the one asked for, else a catch-up walk when one is due; None when
        stopping with nothing left to do."""
        while self._pending is None:
            due = walked + self.catch_up_seconds - time.monotonic()
            if self._stopping:
                return None
            if due <= 0:
                return _Batch(walk=True, own=True)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), due)
        if not (self._pending.walk or self._stopping or self._hurry.is_set()):
            with contextlib.suppress(TimeoutError):  # more turns' files may join it
                await asyncio.wait_for(self._hurry.wait(), self.gather_seconds)
        self._hurry.clear()
        batch, self._pending = self._pending, None
        if not batch.walk and not self._stopping:
            batch.walk = batch.own = time.monotonic() - walked >= self.catch_up_seconds
        batch.paths |= self._carried
        self._carried = set()
        return batch

    async def _run(self, index: MemoryIndex, batch: _Batch) -> None:
        loop = asyncio.get_running_loop()
        try:
            if batch.walk:
                report = await loop.run_in_executor(self._thread, index.sync_files)
            else:
                report = await loop.run_in_executor(
                    self._thread, index.sync_paths, sorted(batch.paths)
                )
        except Exception:  # the index is derived: the next sync catches up
            log.warning("index_sync_failed", exc_info=True)
            self._carried |= batch.paths
            return
        _log_sync(report, walk=batch.walk)

    # ------------------------------------------------------------------ reads

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        k: int,
        wait: Wait = "all",
        now: datetime | None = None,
    ) -> list[Hit]:
        """The open index's best `k` hits within `scopes`, or [] when none is open. Blocking:
        call it through `asyncio.to_thread`: there it first waits for the syncs asked for
        before — or, with `wait="walks"`, only for walks: a turn's own `# Relevant Memory`
        need not wait for the last turn's files, whose exchange the conversation carries, but
        does for a walk (after /new, the archived conversation is memory only). `now`: what
        a time in the query is read against (`MemoryIndex.search`)."""
        index = self._index
        if index is None:
            return []
        self._settle_from_thread(walks_only=wait == "walks")
        return index.search(query, scopes=scopes, k=k, now=now)

    def _settle_from_thread(self, *, walks_only: bool) -> None:
        loop = self._loop
        batches = [b for b in (self._running, self._pending) if b is not None]
        if not any(b.walk or not walks_only for b in batches):
            return  # a request made before this call would be seen here
        if loop is None or _on_event_loop():
            return  # the loop's own thread cannot wait for the loop
        settled = asyncio.run_coroutine_threadsafe(self.settle(walks_only=walks_only), loop)
        try:
            settled.result(timeout=SETTLE_SECONDS)
        except TimeoutError:
            settled.cancel()
            log.warning("index_settle_timed_out", seconds=SETTLE_SECONDS)


def _log_sync(report: SyncReport, *, walk: bool) -> None:
    if report.indexed or report.removed:
        log.debug(
            "index_synced",
            walk=walk,
            indexed=len(report.indexed),
            grown=len(report.grown),
            removed=len(report.removed),
            seconds=round(report.seconds, 4),
        )


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _close(index: MemoryIndex) -> None:
    index.close()
    close = getattr(index.embedder, "close", None)  # an HTTP client (`OpenAIEmbedder`)
    if callable(close):
        close()
