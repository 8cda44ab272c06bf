"""`MemoryIndex`: the searchable index over memory files, exchanges and documents.

It composes the store (SQLite), the vector cache and an optional embedder, and is the one object
the app talks to. Every method is blocking and thread-safe: from async code call it through
`asyncio.to_thread`. Writes embed first (outside the lock), then write SQLite and the cache
together under the lock, so a query never sees one without the other.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import structlog

from bot.errors import LLMError
from bot.index.chunking import DEFAULT_SALIENCE, Chunker
from bot.index.embedding import Embedder, Vectors, query_vectors
from bot.index.keyword import Asked, KeywordSearch
from bot.index.search import Fusion, Hit, vector_candidates
from bot.index.sources import Exchange, source_of_document, source_of_exchange
from bot.index.store import FileClaims, IndexStore, SourceUpdate, Written
from bot.index.sync import (
    FileDelta,
    MarkdownSource,
    SourceReader,
    file_delta,
    source_files,
    source_files_at,
)
from bot.index.vectors import VectorCache
from bot.storage.files import ON_DISK, Documents

log = structlog.get_logger(__name__)

INDEX_FILE = "index.sqlite3"
EMBED_BATCH = 512


@dataclass(frozen=True)
class SyncReport:
    indexed: tuple[str, ...]  # files (re)chunked, whole or as appends
    grown: tuple[str, ...]  # of those, the files indexed as appends (only what was added)
    removed: tuple[str, ...]  # files gone from disk
    skipped: tuple[str, ...]  # not text or unreadable
    unchanged: int  # files whose mtime and size had not moved
    touched: int  # files whose mtime moved but content had not
    seconds: float


@dataclass(frozen=True)
class Document:
    """A text indexed under its own id (a structured memory item); see `add_document`."""

    doc_id: str
    text: str
    scope: str
    kind: str = "item"
    salience: float = DEFAULT_SALIENCE
    at: datetime | None = None
    path: str | None = None


@dataclass(frozen=True)
class IndexStats:
    chunks: dict[str, int]  # per kind
    files: int
    vectors: int
    embedder: str  # "" when keyword-only


class MemoryIndex:
    def __init__(
        self,
        memory_root: Path,
        index_dir: Path,
        *,
        embedder: Embedder | None = None,
        chunker: Chunker | None = None,
        min_similarity: float = 0.0,
        fusion: Fusion = "keyword",  # how vector candidates meet keyword ones (`search.fuse`)
        readers: Sequence[SourceReader] = (),
        documents: Documents = ON_DISK,  # where the files are read (`Workspace.documents`)
    ) -> None:
        """Indexes `memory_root`'s markdown, and what the other `readers` read (the app adds
        the session files and the items' JSONL)."""
        self.memory_root = memory_root
        self.documents = documents
        self.readers: tuple[SourceReader, ...] = (MarkdownSource(memory_root), *readers)
        self.embedder = embedder
        self.chunker = chunker or Chunker()
        self.min_similarity = min_similarity
        self._lock = threading.RLock()  # the store's contents and the caches, as searches see them
        self._syncing = threading.RLock()  # one sync at a time; searches never wait for its reads
        self.store = IndexStore(index_dir / INDEX_FILE, embedder=embedder.name if embedder else "")
        self._vectors = VectorCache(embedder.dim) if embedder else None
        self._keywords = KeywordSearch(self.store, fusion=fusion)
        # numpy and SQLite both release the GIL: the vector scan runs beside the FTS query
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-vectors")
        if embedder is not None:
            self._embed_missing()
        self._load_vectors()

    # ------------------------------------------------------------------ writes

    def sync_files(self) -> SyncReport:
        """Bring the index up to date with every source file (the walk): changed files
        re-read, their new or changed sources written, sources no file claims any more
        dropped (see `bot.index.sync`)."""
        return self._sync(None)

    def sync_paths(self, paths: Iterable[Path]) -> SyncReport:
        """The same for the files at `paths` only (what a turn wrote), without a walk: a path
        no reader wants is ignored, one gone from disk gives up its sources."""
        return self._sync(list(paths))

    def _sync(self, paths: Sequence[Path] | None) -> SyncReport:
        """Files are read, chunked and embedded under `_syncing` only (a search meanwhile
        sees the index as it was); the write and the vector cache's update under `_lock`."""
        started = time.perf_counter()
        with self._syncing:
            with self._lock:
                self._refresh()
            if paths is None:
                files, known = source_files(self.readers, self.documents), self.store.files()
            else:
                files, asked = source_files_at(self.readers, paths, self.documents)
                known = self.store.files(asked)
            delta = file_delta(files, known, self.chunker, last_line=self.store.last_line)
            self._apply(delta)
        return SyncReport(
            indexed=tuple(path for path in delta.paths if path not in delta.skipped),
            grown=delta.grown,
            removed=delta.removed,
            skipped=delta.skipped,
            unchanged=delta.unchanged,
            touched=len(delta.touched),
            seconds=time.perf_counter() - started,
        )

    def _apply(self, delta: FileDelta) -> None:
        """The new sources embedded, then written with the files' records in one transaction:
        a failure (an embedder down) records nothing, and the next sync reads them again."""
        updates = {u.source: u for c in delta.changed for u in c.updates}
        known = self.store.digests(list(updates))
        new = [u for s, u in updates.items() if known.get(s) != u.digest or not u.digest]
        vectors = self._embed([c.text for u in new for c in u.chunks])
        claims = [FileClaims(c.signature, c.sources, added=c.grown) for c in delta.changed]
        with self._lock:
            written = self.store.apply(
                new, vectors, files=claims, touched=delta.touched, gone=delta.removed
            )
            self._follow(written, new, vectors)

    def rebuild(self) -> SyncReport:
        """Drop everything and index the source files again: the same index a live sync
        keeps, since both come from the files alone."""
        with self._syncing, self._lock:
            self.store.reset()
            if self._vectors is not None:
                self._vectors.clear()
            return self.sync_files()

    def scrub(self) -> None:
        """Leave no trace of removed text in the index's files (after a forget)."""
        with self._syncing, self._lock:
            self.store.scrub()

    def add_exchange(self, exchange: Exchange) -> None:
        self.add_exchanges([exchange])

    def add_exchanges(self, exchanges: Sequence[Exchange]) -> None:
        """Index finished turns (kind "exchange"); the same session and turn id replaces."""
        self._write([self._exchange_update(exchange) for exchange in exchanges])

    def _exchange_update(self, exchange: Exchange) -> SourceUpdate:
        path = exchange.path
        chunks = self.chunker.text(
            exchange.text,
            path=path,
            scope=exchange.scope,
            kind="exchange",
            at=exchange.at.timestamp(),
            salience=DEFAULT_SALIENCE,
        )
        return SourceUpdate(source_of_exchange(path), tuple(chunks))

    def add_document(
        self,
        doc_id: str,
        text: str,
        scope: str,
        *,
        kind: str = "item",
        salience: float = DEFAULT_SALIENCE,
        at: datetime | None = None,
        path: str | None = None,
    ) -> None:
        """Index one document (a structured memory item); the same `doc_id` replaces it.
        `path` is what its hits cite (default `items/<doc_id>`)."""
        self.add_documents([Document(doc_id, text, scope, kind, salience, at, path)])

    def add_documents(self, documents: Sequence[Document]) -> None:
        """Index many documents in one write (a rebuild re-adds every item this way)."""
        self._write([self._document_update(document) for document in documents])

    def _document_update(self, doc: Document) -> SourceUpdate:
        chunks = self.chunker.text(
            doc.text,
            path=doc.path or f"items/{doc.doc_id}",
            scope=doc.scope,
            kind=doc.kind,
            at=(doc.at.timestamp() if doc.at else time.time()),
            salience=doc.salience,
        )
        return SourceUpdate(source_of_document(doc.doc_id), tuple(chunks))

    def remove_document(self, doc_id: str) -> None:
        with self._syncing, self._lock:
            self._refresh()
            self._forget(self.store.remove_sources([source_of_document(doc_id)]))

    def _write(self, updates: Sequence[SourceUpdate]) -> None:
        if not updates:
            return
        vectors = self._embed([c.text for u in updates for c in u.chunks])
        with self._syncing, self._lock:
            self._refresh()
            self._follow(self.store.write(updates, vectors), updates, vectors)

    def _follow(
        self, written: Written, updates: Sequence[SourceUpdate], vectors: Vectors | None
    ) -> None:
        """The vector cache follows what was written."""
        self._forget(written)
        if self._vectors is not None and vectors is not None:
            scopes = [c.scope for u in updates for c in u.chunks]
            self._vectors.add(written.added, scopes, vectors)

    def _forget(self, written: Written) -> None:
        if self._vectors is not None:
            self._vectors.remove(written.removed)

    def _embed(self, texts: Sequence[str]) -> Vectors | None:
        """The texts' vectors; None without an embedder or texts (no request for nothing)."""
        if self.embedder is None or not texts:
            return None
        return self.embedder.embed(texts)

    # ------------------------------------------------------------------ reads

    def search(
        self, query: str, *, scopes: Sequence[str], k: int = 8, now: datetime | None = None
    ) -> list[Hit]:
        """The best `k` hits for free text, only from chunks whose scope is in `scopes`
        ("" is the owner's global memory). A time the query names ("last May", read against
        `now`, default the clock: `bot.index.when`) puts the chunks of that time first. Never
        raises on odd input."""
        asked = Asked.read(query, scopes=scopes, k=k, now=now)
        if asked is None:
            return []
        query_vector = self._query_vector(query)
        with self._lock:
            self._refresh()
            vectors = self._vectors
            nearest = (  # in parallel, when there are vectors to scan
                self._pool.submit(
                    _nearest,
                    vectors,
                    query_vector,
                    asked.scopes,
                    vector_candidates(k),
                    self.min_similarity,
                )
                if vectors is not None and query_vector is not None
                else None
            )
            candidates = self._keywords.gather(asked, nearest.result if nearest else None)
        return candidates.hits()

    def _query_vector(self, query: str) -> Vectors | None:
        """The query's embedding; None for a blank query or when the embedder fails (an
        endpoint that is down): the search is then keyword-only."""
        if self.embedder is None or not query.strip():
            return None
        try:
            return query_vectors(self.embedder, [query])  # its query side, if any
        except LLMError:
            log.warning("index_query_embedding_failed", exc_info=True)
            return None

    def stats(self) -> IndexStats:
        counts = self.store.counts()
        files, vectors = counts.pop("files"), counts.pop("vectors")
        return IndexStats(counts, files, vectors, self.embedder.name if self.embedder else "")

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.store.close()

    # ------------------------------------------------------------------ the vector cache

    def _refresh(self) -> None:
        """Follow writes by another process (the CLI): reload the vector cache."""
        if self.store.changed_elsewhere():
            self._load_vectors()

    def _load_vectors(self) -> None:
        with self._lock:
            if self._vectors is None:
                return
            ids, scopes, matrix = self.store.vectors(self._vectors.dim)
            self._vectors.clear()
            self._vectors.add(ids.tolist(), scopes, matrix)

    def _embed_missing(self) -> None:
        """Embed every stored chunk that has no vector (the embedder changed)."""
        missing = self.store.without_vectors()
        if missing:
            log.info("index_embedding_missing", chunks=len(missing))
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start : start + EMBED_BATCH]
            vectors = self._embed([text for _, text in batch])
            if vectors is not None:
                self.store.add_vectors([chunk_id for chunk_id, _ in batch], vectors)


def _nearest(
    vectors: VectorCache, query: Vectors, scopes: Sequence[str], count: int, above: float
) -> list[int]:
    """The `count` chunks nearest `query` in meaning, more similar than `above`."""
    found = vectors.top(query[0], scopes, k=count)
    return [chunk_id for chunk_id, score in found if score > above]
