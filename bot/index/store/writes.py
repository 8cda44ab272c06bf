"""Writing the index, inside the caller's transaction: a source's chunks replaced (whole, or
from a line on: a note that grew), with their FTS text and vectors; the files recorded with
the sources they claim; the sources no file claims any more deleted.

A chunk belongs to one source ("file:<path>", "exchange:<path>", "item:<path>", "doc:<id>").
A source may move between files (an exchange cut from a session into its archive): it is
deleted only when no file claims it any more. `counts` (chunks per scope) is kept in step.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from bot.index.chunking import Chunk
from bot.index.store.database import batches, scope_tag
from bot.index.store.records import FileClaims, FileSignature, SourceUpdate, Written


def write(
    db: sqlite3.Connection,
    updates: Sequence[SourceUpdate],
    vectors: npt.NDArray[np.float32] | None,
    counts: Counter[str],
) -> Written:
    """Replace the chunks of each source; `vectors` has one row per chunk, in update and
    chunk order."""
    removed = delete_sources(db, [u.source for u in updates if not u.from_line], counts)
    for tail in (u for u in updates if u.from_line):
        removed += _delete_tail(db, tail.source, tail.from_line, counts)
    rows = [(update.source, chunk) for update in updates for chunk in update.chunks]
    first = int(db.execute("SELECT coalesce(max(id), 0) + 1 FROM chunks").fetchone()[0])
    ids = tuple(range(first, first + len(rows)))
    _insert(db, ids, rows)
    if vectors is not None:
        add_vectors(db, ids, vectors, replace=False)
    record_files(db, [u.file for u in updates if u.file is not None])
    db.executemany(
        "INSERT OR REPLACE INTO sources(source, digest) VALUES (?, ?)",
        [(u.source, u.digest) for u in updates],
    )
    counts.update(chunk.scope for _, chunk in rows)
    return Written(removed=removed, added=ids)


def _insert(db: sqlite3.Connection, ids: Sequence[int], rows: Sequence[tuple[str, Chunk]]) -> None:
    db.executemany(
        "INSERT INTO chunks(id, source, path, start_line, end_line, scope, kind, at,"
        " salience, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (i, s, c.path, c.start_line, c.end_line, c.scope, c.kind, c.at, c.salience, c.origin)
            for i, (s, c) in zip(ids, rows, strict=True)
        ],
    )
    db.executemany(
        "INSERT INTO chunks_fts(rowid, text, scope_tag) VALUES (?, ?, ?)",
        [(i, c.text, scope_tag(c.scope)) for i, (_, c) in zip(ids, rows, strict=True)],
    )


def add_vectors(
    db: sqlite3.Connection,
    ids: Sequence[int],
    vectors: npt.NDArray[np.float32],
    *,
    replace: bool,
) -> None:
    """Store one vector per id (`replace`: over the one it had)."""
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    db.executemany(
        f"{verb} INTO vectors(id, vector) VALUES (?, ?)",
        zip(ids, (row.tobytes() for row in vectors), strict=True),
    )


def delete_sources(
    db: sqlite3.Connection, sources: Sequence[str], counts: Counter[str]
) -> tuple[int, ...]:
    """Delete the sources' chunks (and digests); the ids removed."""
    if not sources:
        return ()
    found: list[int] = []
    for batch in batches(sources):
        marks = ",".join("?" * len(batch))
        found += _delete_chunks(db, f"source IN ({marks})", batch, counts)
    db.executemany("DELETE FROM sources WHERE source = ?", [(s,) for s in sources])
    return tuple(found)


def _delete_tail(
    db: sqlite3.Connection, source: str, line: int, counts: Counter[str]
) -> tuple[int, ...]:
    """The source's chunks that start at or after `line` (a note re-chunked from there)."""
    where = "source = ? AND start_line >= ?"
    return tuple(_delete_chunks(db, where, (source, line), counts))


def _delete_chunks(
    db: sqlite3.Connection, where: str, params: Sequence[object], counts: Counter[str]
) -> list[int]:
    found: list[int] = []
    for chunk_id, scope in db.execute(f"SELECT id, scope FROM chunks WHERE {where}", params):
        found.append(int(chunk_id))
        counts[str(scope)] -= 1
    if found:
        pairs = [(i,) for i in found]
        db.executemany("DELETE FROM chunks WHERE id = ?", pairs)
        db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", pairs)
        db.executemany("DELETE FROM vectors WHERE id = ?", pairs)
    return found


def record_files(db: sqlite3.Connection, files: Sequence[FileSignature]) -> None:
    db.executemany(
        "INSERT OR REPLACE INTO files(path, mtime_ns, size, sha256, text) VALUES (?, ?, ?, ?, ?)",
        [(f.path, f.mtime_ns, f.size, f.sha256, f.text) for f in files],
    )


def forget_files(db: sqlite3.Connection, paths: Sequence[str]) -> None:
    db.executemany("DELETE FROM files WHERE path = ?", [(path,) for path in paths])


def claim(db: sqlite3.Connection, files: Sequence[FileClaims], *, gone: Sequence[str]) -> list[str]:
    """Record what each file now claims and forget the files `gone`; the sources no file
    claims any more. Only the claims that changed are written."""
    paths = [f.signature.path for f in files if not f.added] + list(gone)
    now = {(f.signature.path, source) for f in files for source in f.sources}
    before = _claims(db, paths)
    dropped = before - now
    db.executemany("DELETE FROM claims WHERE path = ? AND source = ?", sorted(dropped))
    forget_files(db, gone)
    db.executemany("INSERT OR IGNORE INTO claims(path, source) VALUES (?, ?)", sorted(now - before))
    record_files(db, [f.signature for f in files])
    given_up = sorted({source for _, source in dropped})
    return [s for s in given_up if not _is_claimed(db, s)]


def _claims(db: sqlite3.Connection, paths: Sequence[str]) -> set[tuple[str, str]]:
    """The (path, source) claims of these files."""
    found: set[tuple[str, str]] = set()
    for batch in batches(paths):
        marks = ",".join("?" * len(batch))
        rows = db.execute(f"SELECT path, source FROM claims WHERE path IN ({marks})", batch)
        found.update((str(path), str(source)) for path, source in rows)
    return found


def _is_claimed(db: sqlite3.Connection, source: str) -> bool:
    row = db.execute("SELECT 1 FROM claims WHERE source = ? LIMIT 1", (source,)).fetchone()
    return row is not None
