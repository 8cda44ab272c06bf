"""`IndexStore`: the one connection to the index file, guarded by a lock, and the chunks per
scope kept in step with it. Every method is blocking and thread-safe (call it through
`asyncio.to_thread`); the SQL is in `database`, `writes` and `reads` beside it.

Deletes are secure (`secure_delete`), and `scrub` merges the FTS segments and truncates the
WAL, so a forgotten text does not linger in free pages.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bot.index.store import reads, writes
from bot.index.store.database import open_database, recreate, transaction
from bot.index.store.records import ChunkRow, FileClaims, FileSignature, SourceUpdate, Written


class IndexStore:
    def __init__(self, path: Path, *, embedder: str) -> None:
        self.path = path
        self.embedder = embedder  # "" when keyword-only
        self._lock = threading.RLock()
        self._db = open_database(path, embedder=embedder)
        self._scope_counts = self._count_scopes()  # chunks per scope, kept in step
        self._data_version = self._scalar("PRAGMA data_version")

    def reset(self) -> None:
        """Drop everything (a rebuild starts from here)."""
        with self._lock:
            with self._transaction() as db:
                recreate(db, embedder=self.embedder)
            self._scope_counts = Counter()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                with transaction(self._db) as db:
                    yield db
            except BaseException:
                self._scope_counts = self._count_scopes()
                raise

    def _count_scopes(self) -> Counter[str]:
        with self._lock:
            return Counter(reads.scope_counts(self._db))

    def _scalar(self, sql: str) -> int:
        with self._lock:
            return reads.scalar(self._db, sql)

    # ------------------------------------------------------------------ writes

    def write(
        self,
        updates: Sequence[SourceUpdate],
        vectors: npt.NDArray[np.float32] | None = None,
    ) -> Written:
        """Replace the chunks of each source, in one transaction; `vectors` has one row per
        chunk, in update and chunk order."""
        with self._transaction() as db:
            return writes.write(db, updates, vectors, self._scope_counts)

    def apply(
        self,
        updates: Sequence[SourceUpdate],
        vectors: npt.NDArray[np.float32] | None,
        *,
        files: Sequence[FileClaims],
        touched: Sequence[FileSignature],
        gone: Sequence[str],
    ) -> Written:
        """A file sync, in one transaction: the sources written (as `write`), each changed
        file recorded with what it claims, the touched ones re-recorded, the files `gone`
        forgotten, and the sources no file claims any more deleted."""
        with self._transaction() as db:
            written = writes.write(db, updates, vectors, self._scope_counts)
            orphans = writes.claim(db, files, gone=gone)
            writes.record_files(db, touched)
            removed = writes.delete_sources(db, orphans, self._scope_counts)
        return Written(removed=written.removed + removed, added=written.added)

    def remove_sources(self, sources: Sequence[str], *, files: Sequence[str] = ()) -> Written:
        """Delete the sources' chunks, and forget the given file paths."""
        with self._transaction() as db:
            removed = writes.delete_sources(db, sources, self._scope_counts)
            writes.forget_files(db, files)
        return Written(removed=removed, added=())

    def add_vectors(self, ids: Sequence[int], vectors: npt.NDArray[np.float32]) -> None:
        with self._transaction() as db:
            writes.add_vectors(db, ids, vectors, replace=True)

    def scrub(self) -> None:
        """Leave no deleted text on disk: merge the FTS segments, checkpoint the WAL."""
        with self._lock:
            self._db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # ------------------------------------------------------------------ reads

    def files(self, paths: Sequence[str] | None = None) -> dict[str, FileSignature]:
        """What the last sync saw of each file (of `paths` only, when given)."""
        with self._lock:
            return reads.files(self._db, paths)

    def digests(self, sources: Sequence[str]) -> dict[str, str]:
        """The digest each of `sources` was written at (absent: never written)."""
        with self._lock:
            return reads.digests(self._db, sources)

    def last_line(self, source: str) -> int | None:
        """Where the source's last chunk starts (None when it has none)."""
        with self._lock:
            return reads.last_line(self._db, source)

    def match(
        self,
        expression: str,
        scopes: Sequence[str],
        *,
        limit: int,
        ranked: bool,
        between: tuple[float, float] | None = None,
    ) -> list[int]:
        """Chunk ids matching the expression within `scopes`: best bm25 first when `ranked`,
        else newest first (`reads.match`); `between` (epoch seconds, end exclusive) keeps
        only chunks of that time (`reads.match_between`)."""
        with self._lock:
            if between is not None:
                return reads.match_between(
                    self._db, expression, scopes, limit=limit, ranked=ranked, at=between
                )
            coverage = self._coverage(scopes)
            return reads.match(
                self._db, expression, scopes, limit=limit, ranked=ranked, coverage=coverage
            )

    def newest(
        self, scopes: Sequence[str], *, between: tuple[float, float], limit: int
    ) -> list[int]:
        """The newest chunk ids of that time (epoch seconds, end exclusive) within `scopes`."""
        with self._lock:
            return reads.newest(self._db, scopes, between=between, limit=limit)

    def document_frequency(self, term: str, scopes: Sequence[str] | None = None) -> int:
        """How many chunks contain the word (as FTS5 stems it): of the whole index, or of
        `scopes` only."""
        with self._lock:
            return reads.document_frequency(self._db, term, scopes)

    def chunks_in(self, scopes: Sequence[str]) -> int:
        """How many chunks lie within `scopes`."""
        return sum(self._scope_counts.get(scope, 0) for scope in set(scopes))

    @property
    def size(self) -> int:
        """How many chunks the index holds."""
        return sum(self._scope_counts.values())

    def _coverage(self, scopes: Sequence[str]) -> float:
        """The share of all chunks that lie within `scopes`."""
        size = self.size
        if size == 0:
            return 0.0
        return self.chunks_in(scopes) / size

    def rows(self, ids: Iterable[int], scopes: Sequence[str], *, text: bool) -> dict[int, ChunkRow]:
        """The chunks with these ids that lie within `scopes`."""
        with self._lock:
            return reads.rows(self._db, ids, scopes, text=text)

    def every_row(self) -> list[ChunkRow]:
        """Every chunk with its text, in id order: the index copied into another engine
        (`benchmarks/pg_keywords.py`)."""
        with self._lock:
            return reads.every_row(self._db)

    def vectors(self, dim: int) -> tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.float32]]:
        """Every stored vector: ids, their scopes, and the matrix (one row each)."""
        with self._lock:
            return reads.vectors(self._db, dim)

    def without_vectors(self) -> list[tuple[int, str]]:
        """Ids and texts of the chunks that have no vector (after a change of embedder, or
        an embedding interrupted by a crash)."""
        with self._lock:
            return reads.without_vectors(self._db)

    def counts(self) -> dict[str, int]:
        """Chunks per kind, plus "files" and "vectors"."""
        with self._lock:
            return reads.kind_counts(self._db)

    def changed_elsewhere(self) -> bool:
        """True (once) when another connection — another process, such as the CLI — has
        committed since this one last looked; the scope counts are then recounted."""
        with self._lock:
            version = self._scalar("PRAGMA data_version")
            if version == self._data_version:
                return False
            self._data_version = version
            self._scope_counts = self._count_scopes()
            return True

    def close(self) -> None:
        with self._lock:
            self._db.close()
