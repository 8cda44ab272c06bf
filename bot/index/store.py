"""The index database: one SQLite file (WAL) holding chunks, their FTS5 text, vectors and the
signatures of the files they came from.

    meta(key, value)            schema_version, embedder; a schema mismatch drops everything
    files(path, mtime_ns, size, sha256, text)      what the last sync saw of each source file
    claims(path, source)                           which sources each file holds (sync.py)
    sources(source, digest)                        the content digest each source was written at
    chunks(id, source, path, start_line, end_line, scope, kind, at, salience)   by at too
    chunks_fts(text, scope_tag)                    FTS5, rowid = chunks.id; porter + unicode61
    vectors(id, vector)                            float32 blobs, id = chunks.id

A chunk belongs to one source ("file:<path>", "exchange:<path>", "item:<path>", "doc:<id>");
writing a source replaces all its chunks, or those from a line on (a note that grew). A source
may move between files (an exchange cut from a session into its archive): it is deleted only
when no file claims it any more. Deletes are secure (`secure_delete`), and `scrub` merges the
FTS segments and truncates the WAL, so a forgotten text does not linger in free pages.

Scope isolation is enforced in SQL twice: the MATCH expression is ANDed with the allowed scopes'
tags (so bm25 ranks only allowed rows) and the joined `chunks` row must have an allowed scope.
One connection, guarded by a lock: every method is blocking and thread-safe (call it through
`asyncio.to_thread`).
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog

from bot.index.chunking import Chunk
from bot.storage.files import FILE_MODE, ensure_dir

log = structlog.get_logger(__name__)

SCHEMA_VERSION = 3
_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
                   sha256 TEXT NOT NULL, text INTEGER NOT NULL);
CREATE TABLE chunks(id INTEGER PRIMARY KEY, source TEXT NOT NULL, path TEXT NOT NULL,
                    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, scope TEXT NOT NULL,
                    kind TEXT NOT NULL, at REAL NOT NULL, salience REAL NOT NULL);
CREATE INDEX chunks_source ON chunks(source);
CREATE INDEX chunks_at ON chunks(at);
CREATE TABLE claims(path TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY(path, source));
CREATE INDEX claims_source ON claims(source);
CREATE TABLE sources(source TEXT PRIMARY KEY, digest TEXT NOT NULL);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    text, scope_tag, tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE vectors(id INTEGER PRIMARY KEY, vector BLOB NOT NULL);
"""
_DROP = ("meta", "files", "claims", "sources", "chunks", "chunks_fts", "vectors")


@lru_cache(maxsize=4096)
def scope_tag(scope: str) -> str:
    """A scope as one opaque FTS token: chat keys tokenize into several words, and a phrase
    of them could match a longer key (`telegram:-100` inside `telegram:-100:7`)."""
    digest = int.from_bytes(hashlib.sha256(scope.encode()).digest()[:10])
    return f"s{digest:025d}"  # ends in a digit: the porter stemmer leaves it alone


@dataclass(frozen=True)
class FileSignature:
    path: str  # relative to memory/
    mtime_ns: int
    size: int
    sha256: str
    text: bool = True  # False: not text when read (indexed as empty)


@dataclass(frozen=True)
class ChunkRow:
    """A stored chunk as search sees it (text only when asked for)."""

    id: int
    path: str
    start_line: int
    end_line: int
    scope: str
    kind: str
    at: float
    salience: float
    text: str = ""


@dataclass(frozen=True)
class SourceUpdate:
    """The chunks of one source, replacing what it had (from `from_line` on, when given: the
    tail of a note that grew); `file` is recorded for a file."""

    source: str
    chunks: tuple[Chunk, ...]
    file: FileSignature | None = None
    digest: str = ""  # of the content the chunks were made from ("" for direct writes)
    from_line: int = 0  # > 0: only the source's chunks that start at or after this line go


@dataclass(frozen=True)
class FileClaims:
    """One file's sources after a sync: it is recorded with `signature` and claims `sources`
    (besides what it claimed before when it only grew: `added`)."""

    signature: FileSignature
    sources: tuple[str, ...]
    added: bool = False


@dataclass(frozen=True)
class Written:
    """What a write changed, for the in-memory vector cache to follow."""

    removed: tuple[int, ...]
    added: tuple[int, ...]  # ids of the written chunks, in update and chunk order


class IndexStore:
    def __init__(self, path: Path, *, embedder: str) -> None:
        self.path = path
        self.embedder = embedder  # "" when keyword-only
        self._lock = threading.RLock()
        self._scope_counts: Counter[str] = Counter()  # chunks per scope, kept in step
        try:
            self._db = self._open()
        except sqlite3.DatabaseError:  # not a database, or a damaged one: it is only an index
            log.warning("index_unreadable_recreated", path=str(path), exc_info=True)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            self._db = self._open()
        self._scope_counts = self._count_scopes()
        self._data_version = self._scalar("PRAGMA data_version")

    def _open(self) -> sqlite3.Connection:
        ensure_dir(self.path.parent)
        os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, FILE_MODE))  # WAL, SHM copy it
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            pragmas = (
                "journal_mode=WAL",
                "synchronous=NORMAL",
                "busy_timeout=5000",
                "secure_delete=ON",
            )
            for pragma in pragmas:
                self._db.execute(f"PRAGMA {pragma}")
            self._ensure_schema()
        except sqlite3.DatabaseError:
            self._db.close()
            raise
        return self._db

    # ------------------------------------------------------------------ schema

    def _ensure_schema(self) -> None:
        with self._lock:
            if self._meta("schema_version") != str(SCHEMA_VERSION):
                self._recreate()
                return
            self._db.execute("CREATE INDEX IF NOT EXISTS chunks_at ON chunks(at)")  # since 13
            if self._meta("embedder") != self.embedder:
                with self._transaction() as db:  # other vectors: the caller re-embeds
                    db.execute("DELETE FROM vectors")
                    self._set_meta(db, "embedder", self.embedder)

    def _recreate(self) -> None:
        with self._transaction() as db:
            for table in _DROP:
                db.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            self._set_meta(db, "schema_version", str(SCHEMA_VERSION))
            self._set_meta(db, "embedder", self.embedder)
        self._scope_counts = Counter()

    def reset(self) -> None:
        """Drop everything (a rebuild starts from here)."""
        with self._lock:
            self._recreate()

    def _count_scopes(self) -> Counter[str]:
        with self._lock:
            rows = self._db.execute("SELECT scope, count(*) FROM chunks GROUP BY scope")
            return Counter({str(scope): int(count) for scope, count in rows})

    def _meta(self, key: str) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # no meta table: a new or foreign file
            return None
        return None if row is None else str(row[0])

    @staticmethod
    def _set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                self._scope_counts = self._count_scopes()
                raise

    def _scalar(self, sql: str) -> int:
        with self._lock:
            return int(self._db.execute(sql).fetchone()[0])

    # ------------------------------------------------------------------ writes

    def write(
        self,
        updates: Sequence[SourceUpdate],
        vectors: npt.NDArray[np.float32] | None = None,
    ) -> Written:
        """Replace the chunks of each source, in one transaction; `vectors` has one row per
        chunk, in update and chunk order."""
        with self._transaction() as db:
            return self._write(db, updates, vectors)

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
            written = self._write(db, updates, vectors)
            orphans = self._claim(db, files, gone=gone)
            self._record_files(db, touched)
            removed = self._delete_sources(db, orphans)
        return Written(removed=written.removed + removed, added=written.added)

    def _write(
        self,
        db: sqlite3.Connection,
        updates: Sequence[SourceUpdate],
        vectors: npt.NDArray[np.float32] | None,
    ) -> Written:
        removed = self._delete_sources(db, [u.source for u in updates if not u.from_line])
        for tail in (u for u in updates if u.from_line):
            removed += self._delete_tail(db, tail.source, tail.from_line)
        rows = [(update.source, chunk) for update in updates for chunk in update.chunks]
        first = int(db.execute("SELECT coalesce(max(id), 0) + 1 FROM chunks").fetchone()[0])
        ids = tuple(range(first, first + len(rows)))
        self._insert(db, ids, rows)
        if vectors is not None:
            db.executemany(
                "INSERT INTO vectors(id, vector) VALUES (?, ?)",
                zip(ids, (row.tobytes() for row in vectors), strict=True),
            )
        self._record_files(db, [u.file for u in updates if u.file is not None])
        db.executemany(
            "INSERT OR REPLACE INTO sources(source, digest) VALUES (?, ?)",
            [(u.source, u.digest) for u in updates],
        )
        self._scope_counts.update(chunk.scope for _, chunk in rows)
        return Written(removed=removed, added=ids)

    def _insert(
        self, db: sqlite3.Connection, ids: Sequence[int], rows: Sequence[tuple[str, Chunk]]
    ) -> None:
        db.executemany(
            "INSERT INTO chunks(id, source, path, start_line, end_line, scope, kind, at,"
            " salience) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (i, s, c.path, c.start_line, c.end_line, c.scope, c.kind, c.at, c.salience)
                for i, (s, c) in zip(ids, rows, strict=True)
            ],
        )
        db.executemany(
            "INSERT INTO chunks_fts(rowid, text, scope_tag) VALUES (?, ?, ?)",
            [(i, c.text, scope_tag(c.scope)) for i, (_, c) in zip(ids, rows, strict=True)],
        )

    def remove_sources(self, sources: Sequence[str], *, files: Sequence[str] = ()) -> Written:
        """Delete the sources' chunks, and forget the given file paths."""
        with self._transaction() as db:
            removed = self._delete_sources(db, sources)
            db.executemany("DELETE FROM files WHERE path = ?", [(path,) for path in files])
        return Written(removed=removed, added=())

    def _delete_sources(self, db: sqlite3.Connection, sources: Sequence[str]) -> tuple[int, ...]:
        if not sources:
            return ()
        found: list[int] = []
        for batch in _batches(sources, 500):
            marks = ",".join("?" * len(batch))
            found += self._delete_chunks(db, f"source IN ({marks})", batch)
        db.executemany("DELETE FROM sources WHERE source = ?", [(s,) for s in sources])
        return tuple(found)

    def _delete_tail(self, db: sqlite3.Connection, source: str, line: int) -> tuple[int, ...]:
        """The source's chunks that start at or after `line` (a note re-chunked from there)."""
        return tuple(self._delete_chunks(db, "source = ? AND start_line >= ?", (source, line)))

    def _delete_chunks(
        self, db: sqlite3.Connection, where: str, params: Sequence[object]
    ) -> list[int]:
        found: list[int] = []
        for chunk_id, scope in db.execute(f"SELECT id, scope FROM chunks WHERE {where}", params):
            found.append(int(chunk_id))
            self._scope_counts[str(scope)] -= 1
        if found:
            pairs = [(i,) for i in found]
            db.executemany("DELETE FROM chunks WHERE id = ?", pairs)
            db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", pairs)
            db.executemany("DELETE FROM vectors WHERE id = ?", pairs)
        return found

    @staticmethod
    def _record_files(db: sqlite3.Connection, files: Sequence[FileSignature]) -> None:
        db.executemany(
            "INSERT OR REPLACE INTO files(path, mtime_ns, size, sha256, text)"
            " VALUES (?, ?, ?, ?, ?)",
            [(f.path, f.mtime_ns, f.size, f.sha256, f.text) for f in files],
        )

    def _claim(
        self, db: sqlite3.Connection, files: Sequence[FileClaims], *, gone: Sequence[str]
    ) -> list[str]:
        """Record what each file now claims and forget the files `gone`; the sources no file
        claims any more. Only the claims that changed are written."""
        paths = [f.signature.path for f in files if not f.added] + list(gone)
        now = {(f.signature.path, source) for f in files for source in f.sources}
        before = self._claims(db, paths)
        dropped = before - now
        db.executemany("DELETE FROM claims WHERE path = ? AND source = ?", sorted(dropped))
        db.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in gone])
        db.executemany(
            "INSERT OR IGNORE INTO claims(path, source) VALUES (?, ?)", sorted(now - before)
        )
        self._record_files(db, [f.signature for f in files])
        given_up = sorted({source for _, source in dropped})
        return [s for s in given_up if not self._is_claimed(db, s)]

    @staticmethod
    def _claims(db: sqlite3.Connection, paths: Sequence[str]) -> set[tuple[str, str]]:
        """The (path, source) claims of these files."""
        found: set[tuple[str, str]] = set()
        for batch in _batches(paths, 500):
            marks = ",".join("?" * len(batch))
            rows = db.execute(f"SELECT path, source FROM claims WHERE path IN ({marks})", batch)
            found.update((str(path), str(source)) for path, source in rows)
        return found

    @staticmethod
    def _is_claimed(db: sqlite3.Connection, source: str) -> bool:
        row = db.execute("SELECT 1 FROM claims WHERE source = ? LIMIT 1", (source,)).fetchone()
        return row is not None

    def digests(self, sources: Sequence[str]) -> dict[str, str]:
        """The digest each of `sources` was written at (absent: never written)."""
        found: dict[str, str] = {}
        with self._lock:
            for batch in _batches(sources, 500):
                marks = ",".join("?" * len(batch))
                sql = f"SELECT source, digest FROM sources WHERE source IN ({marks})"
                found.update({str(s): str(d) for s, d in self._db.execute(sql, batch)})
        return found

    def scrub(self) -> None:
        """Leave no deleted text on disk: merge the FTS segments, checkpoint the WAL."""
        with self._lock:
            self._db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # ------------------------------------------------------------------ reads

    def files(self, paths: Sequence[str] | None = None) -> dict[str, FileSignature]:
        """What the last sync saw of each file (of `paths` only, when given)."""
        sql = "SELECT path, mtime_ns, size, sha256, text FROM files"
        with self._lock:
            if paths is None:
                rows = self._db.execute(sql).fetchall()
            else:
                rows = [row for b in _batches(paths, 500) for row in self._select_in(sql, b)]
        return {
            str(path): FileSignature(str(path), int(mtime), int(size), str(sha), bool(text))
            for path, mtime, size, sha, text in rows
        }

    def _select_in(self, sql: str, paths: Sequence[str]) -> list[tuple[Any, ...]]:
        marks = ",".join("?" * len(paths))
        return self._db.execute(f"{sql} WHERE path IN ({marks})", paths).fetchall()

    def last_line(self, source: str) -> int | None:
        """Where the source's last chunk starts (None when it has none)."""
        sql = "SELECT max(start_line) FROM chunks WHERE source = ?"
        with self._lock:
            found = self._db.execute(sql, (source,)).fetchone()[0]
        return None if found is None else int(found)

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
        else newest first. When the scopes hold most chunks, the MATCH runs unfiltered with
        a larger limit and the join filters (cheaper than ANDing a tag in most rows);
        otherwise the scope tags are ANDed into the MATCH. `between` (epoch seconds, end
        exclusive) keeps only chunks of that time: every match is then joined (the keyword
        budget bounds how many a ranked query has)."""
        if between is not None:
            return self._match_between(expression, scopes, limit=limit, ranked=ranked, at=between)
        coverage = self._coverage(scopes)
        match, fetch = f"text:({expression})", limit
        if coverage < 0.5:
            match += " AND scope_tag:(" + " OR ".join(scope_tag(s) for s in scopes) + ")"
        else:
            fetch = math.ceil(limit / coverage) + limit // 5
        score = "bm25(chunks_fts, 1.0, 0.0)" if ranked else "-rowid"
        order = "score" if ranked else "rowid DESC"
        sql = (
            f"SELECT m.id FROM (SELECT rowid AS id, {score} AS score FROM chunks_fts"
            f" WHERE chunks_fts MATCH ? ORDER BY {order} LIMIT ?) AS m"
            f" JOIN chunks AS c ON c.id = m.id"
            f" WHERE c.scope IN ({','.join('?' * len(scopes))}) ORDER BY m.score LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, (match, fetch, *scopes, limit)).fetchall()
        return [int(row[0]) for row in rows]

    def _match_between(
        self,
        expression: str,
        scopes: Sequence[str],
        *,
        limit: int,
        ranked: bool,
        at: tuple[float, float],
    ) -> list[int]:
        score = "bm25(chunks_fts, 1.0, 0.0)" if ranked else "-rowid"
        sql = (
            f"SELECT m.id FROM (SELECT rowid AS id, {score} AS score FROM chunks_fts"
            f" WHERE chunks_fts MATCH ?) AS m JOIN chunks AS c ON c.id = m.id"
            f" WHERE c.at >= ? AND c.at < ? AND c.scope IN ({','.join('?' * len(scopes))})"
            f" ORDER BY m.score LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, (f"text:({expression})", *at, *scopes, limit))
            return [int(row[0]) for row in rows]

    def newest(
        self, scopes: Sequence[str], *, between: tuple[float, float], limit: int
    ) -> list[int]:
        """The newest chunk ids of that time (epoch seconds, end exclusive) within `scopes`."""
        sql = (
            "SELECT id FROM chunks WHERE at >= ? AND at < ?"
            f" AND scope IN ({','.join('?' * len(scopes))}) ORDER BY at DESC, id DESC LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, (*between, *scopes, limit))
            return [int(row[0]) for row in rows]

    def document_frequency(self, term: str) -> int:
        """How many chunks contain the word (as FTS5 stems it)."""
        sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
        with self._lock:
            return int(self._db.execute(sql, (f'text:"{term}"',)).fetchone()[0])

    @property
    def size(self) -> int:
        """How many chunks the index holds."""
        return sum(self._scope_counts.values())

    def _coverage(self, scopes: Sequence[str]) -> float:
        """The share of all chunks that lie within `scopes`."""
        size = self.size
        if size == 0:
            return 0.0
        return sum(self._scope_counts.get(scope, 0) for scope in scopes) / size

    def rows(self, ids: Iterable[int], scopes: Sequence[str], *, text: bool) -> dict[int, ChunkRow]:
        """The chunks with these ids that lie within `scopes`."""
        wanted = list(dict.fromkeys(ids))
        if not wanted or not scopes:
            return {}
        column = "f.text" if text else "''"
        join = " JOIN chunks_fts AS f ON f.rowid = c.id" if text else ""
        sql = (
            f"SELECT c.id, c.path, c.start_line, c.end_line, c.scope, c.kind, c.at, c.salience,"
            f" {column} FROM chunks AS c{join}"
            f" WHERE c.id IN ({','.join('?' * len(wanted))})"
            f" AND c.scope IN ({','.join('?' * len(scopes))})"
        )
        with self._lock:
            found = self._db.execute(sql, (*wanted, *scopes)).fetchall()
        return {int(row[0]): ChunkRow(*row) for row in found}

    def vectors(self, dim: int) -> tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.float32]]:
        """Every stored vector: ids, their scopes, and the matrix (one row each)."""
        with self._lock:
            found = self._db.execute(
                "SELECT v.id, c.scope, v.vector FROM vectors AS v JOIN chunks AS c ON c.id = v.id"
            ).fetchall()
        ids = np.fromiter((row[0] for row in found), dtype=np.int64, count=len(found))
        matrix = np.frombuffer(b"".join(row[2] for row in found), dtype=np.float32)
        return ids, [row[1] for row in found], matrix.reshape(len(found), dim)

    def without_vectors(self) -> list[tuple[int, str]]:
        """Ids and texts of the chunks that have no vector (after a change of embedder, or
        an embedding interrupted by a crash)."""
        sql = (
            "SELECT c.id, f.text FROM chunks AS c JOIN chunks_fts AS f ON f.rowid = c.id"
            " WHERE NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.id = c.id)"
        )
        with self._lock:
            return [(int(row[0]), str(row[1])) for row in self._db.execute(sql)]

    def add_vectors(self, ids: Sequence[int], vectors: npt.NDArray[np.float32]) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors(id, vector) VALUES (?, ?)",
                zip(ids, (row.tobytes() for row in vectors), strict=True),
            )

    def counts(self) -> dict[str, int]:
        """Chunks per kind, plus "files" and "vectors"."""
        with self._lock:
            kinds = self._db.execute("SELECT kind, count(*) FROM chunks GROUP BY kind").fetchall()
            counts = {str(kind): int(n) for kind, n in kinds}
            counts["files"] = self._scalar("SELECT count(*) FROM files")
            counts["vectors"] = self._scalar("SELECT count(*) FROM vectors")
        return counts

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


def _batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
