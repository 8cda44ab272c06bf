"""The SQLite file itself: its tables and their version, how it is opened (WAL, secure delete;
a damaged file is recreated: it is only an index), and the FTS scope tag.

    meta(key, value)            schema_version, embedder; a schema mismatch drops everything
    files(path, mtime_ns, size, sha256, text)      what the last sync saw of each source file
    claims(path, source)                           which sources each file holds (bot.index.sync)
    sources(source, digest)                        the content digest each source was written at
    chunks(id, source, path, start_line, end_line, scope, kind, at, salience, origin)  by at
    chunks_fts(text, scope_tag)                    FTS5, rowid = chunks.id; porter + unicode61
    vectors(id, vector)                            float32 blobs, id = chunks.id
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import structlog

from bot.storage.files import FILE_MODE, ensure_dir

log = structlog.get_logger(__name__)

SCHEMA_VERSION = 4  # 4: chunks.origin
_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
                   sha256 TEXT NOT NULL, text INTEGER NOT NULL);
CREATE TABLE chunks(id INTEGER PRIMARY KEY, source TEXT NOT NULL, path TEXT NOT NULL,
                    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, scope TEXT NOT NULL,
                    kind TEXT NOT NULL, at REAL NOT NULL, salience REAL NOT NULL,
                    origin TEXT NOT NULL DEFAULT '');
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
_PRAGMAS = ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=5000", "secure_delete=ON")


@lru_cache(maxsize=4096)
def scope_tag(scope: str) -> str:
    """A scope as one opaque FTS token: chat keys tokenize into several words, and a phrase
    of them could match a longer key (`telegram:-100` inside `telegram:-100:7`)."""
    digest = int.from_bytes(hashlib.sha256(scope.encode()).digest()[:10])
    return f"s{digest:025d}"  # ends in a digit: the porter stemmer leaves it alone


TAG_CHARS = len(scope_tag(""))


def open_database(path: Path, *, embedder: str) -> sqlite3.Connection:
    """The index file at `path`, its schema current and its vectors made by `embedder` (a
    file that is not a database, or a damaged one, is deleted and made anew)."""
    try:
        return _open(path, embedder=embedder)
    except sqlite3.DatabaseError:
        log.warning("index_unreadable_recreated", path=str(path), exc_info=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return _open(path, embedder=embedder)


def _open(path: Path, *, embedder: str) -> sqlite3.Connection:
    ensure_dir(path.parent)
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, FILE_MODE))  # WAL, SHM copy it
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        for pragma in _PRAGMAS:
            db.execute(f"PRAGMA {pragma}")
        _ensure_schema(db, embedder=embedder)
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def _ensure_schema(db: sqlite3.Connection, *, embedder: str) -> None:
    if _meta(db, "schema_version") != str(SCHEMA_VERSION):
        with transaction(db):
            recreate(db, embedder=embedder)
        return
    db.execute("CREATE INDEX IF NOT EXISTS chunks_at ON chunks(at)")  # since 13
    if _meta(db, "embedder") != embedder:
        with transaction(db):  # other vectors: the caller re-embeds
            db.execute("DELETE FROM vectors")
            _set_meta(db, "embedder", embedder)


def recreate(db: sqlite3.Connection, *, embedder: str) -> None:
    """Drop every table and make them anew, empty (inside the caller's transaction)."""
    for table in _DROP:
        db.execute(f"DROP TABLE IF EXISTS {table}")
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    _set_meta(db, "schema_version", str(SCHEMA_VERSION))
    _set_meta(db, "embedder", embedder)


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """`BEGIN IMMEDIATE` … `COMMIT`, or `ROLLBACK` when the block raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError:  # no meta table: a new or foreign file
        return None
    return None if row is None else str(row[0])


def _set_meta(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def batches(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    """`items` in slices of at most `size` (SQLite bounds the parameters of one statement)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
