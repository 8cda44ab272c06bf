"""Reading the index: the FTS5 MATCH (bm25 or newest first, within scopes, within a time),
chunk rows by id, the stored vectors, what the last sync recorded of files and sources.

Scope isolation is enforced in SQL twice: the MATCH expression is ANDed with the allowed
scopes' tags (so bm25 ranks only allowed rows) and the joined `chunks` row must have an
allowed scope.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from bot.index.store.database import TAG_CHARS, batches, scope_tag
from bot.index.store.records import ChunkRow, FileSignature


def in_text(expression: str) -> str:
    """The MATCH clause for an expression of quoted words (`bot.index.query.fts_expression`)
    in the text column. The column filter (`text:`) makes FTS5 read every posting's positions
    (a third of a ranked query's time at 100k chunks), and it can change a result only when
    a word could be a scope tag: the other column holds nothing else, and a word's token is
    never longer than the word (`TAG_CHARS`). So it is kept only for such a word."""
    if any(len(word) >= TAG_CHARS for word in expression.split('"')[1::2]):
        return f"text:({expression})"
    return f"({expression})"


def match(
    db: sqlite3.Connection,
    expression: str,
    scopes: Sequence[str],
    *,
    limit: int,
    ranked: bool,
    coverage: float,
) -> list[int]:
    """Chunk ids matching the expression within `scopes` (which hold `coverage` of all
    chunks): best bm25 first when `ranked`, else newest first. When the scopes hold most
    chunks, the MATCH runs unfiltered with a larger limit and the join filters (cheaper than
    ANDing a tag in most rows); otherwise the scope tags are ANDed into the MATCH."""
    clause, fetch = in_text(expression), limit
    if coverage < 0.5:
        clause += " AND scope_tag:(" + " OR ".join(scope_tag(s) for s in scopes) + ")"
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
    rows = db.execute(sql, (clause, fetch, *scopes, limit)).fetchall()
    return [int(row[0]) for row in rows]


def match_between(
    db: sqlite3.Connection,
    expression: str,
    scopes: Sequence[str],
    *,
    limit: int,
    ranked: bool,
    at: tuple[float, float],
) -> list[int]:
    """As `match`, only chunks of that time (epoch seconds, end exclusive): every match is
    joined (the keyword budget bounds how many a ranked query has)."""
    score = "bm25(chunks_fts, 1.0, 0.0)" if ranked else "-rowid"
    sql = (
        f"SELECT m.id FROM (SELECT rowid AS id, {score} AS score FROM chunks_fts"
        f" WHERE chunks_fts MATCH ?) AS m JOIN chunks AS c ON c.id = m.id"
        f" WHERE c.at >= ? AND c.at < ? AND c.scope IN ({','.join('?' * len(scopes))})"
        f" ORDER BY m.score LIMIT ?"
    )
    rows = db.execute(sql, (in_text(expression), *at, *scopes, limit))
    return [int(row[0]) for row in rows]


def newest(
    db: sqlite3.Connection, scopes: Sequence[str], *, between: tuple[float, float], limit: int
) -> list[int]:
    """The newest chunk ids of that time (epoch seconds, end exclusive) within `scopes`."""
    sql = (
        "SELECT id FROM chunks WHERE at >= ? AND at < ?"
        f" AND scope IN ({','.join('?' * len(scopes))}) ORDER BY at DESC, id DESC LIMIT ?"
    )
    rows = db.execute(sql, (*between, *scopes, limit))
    return [int(row[0]) for row in rows]


def document_frequency(
    db: sqlite3.Connection, term: str, scopes: Sequence[str] | None = None
) -> int:
    """How many chunks contain the word (as FTS5 stems it): of the whole index, or of
    `scopes` only."""
    clause = in_text(f'"{term}"')
    if scopes is not None:
        clause += " AND scope_tag:(" + " OR ".join(scope_tag(s) for s in scopes) + ")"
    sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    return int(db.execute(sql, (clause,)).fetchone()[0])


def rows(
    db: sqlite3.Connection, ids: Iterable[int], scopes: Sequence[str], *, text: bool
) -> dict[int, ChunkRow]:
    """The chunks with these ids that lie within `scopes`."""
    wanted = list(dict.fromkeys(ids))
    if not wanted or not scopes:
        return {}
    column = "f.text" if text else "''"
    join = " JOIN chunks_fts AS f ON f.rowid = c.id" if text else ""
    sql = (
        f"SELECT c.id, c.path, c.start_line, c.end_line, c.scope, c.kind, c.at, c.salience,"
        f" {column}, c.origin FROM chunks AS c{join}"
        f" WHERE c.id IN ({','.join('?' * len(wanted))})"
        f" AND c.scope IN ({','.join('?' * len(scopes))})"
    )
    found = db.execute(sql, (*wanted, *scopes)).fetchall()
    return {int(row[0]): ChunkRow(*row) for row in found}


def every_row(db: sqlite3.Connection) -> list[ChunkRow]:
    """Every chunk, with its text, in id order."""
    sql = (
        "SELECT c.id, c.path, c.start_line, c.end_line, c.scope, c.kind, c.at, c.salience,"
        " f.text, c.origin FROM chunks AS c JOIN chunks_fts AS f ON f.rowid = c.id ORDER BY c.id"
    )
    return [ChunkRow(*row) for row in db.execute(sql)]


def vectors(
    db: sqlite3.Connection, dim: int
) -> tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.float32]]:
    """Every stored vector: ids, their scopes, and the matrix (one row each)."""
    found = db.execute(
        "SELECT v.id, c.scope, v.vector FROM vectors AS v JOIN chunks AS c ON c.id = v.id"
    ).fetchall()
    ids = np.fromiter((row[0] for row in found), dtype=np.int64, count=len(found))
    matrix = np.frombuffer(b"".join(row[2] for row in found), dtype=np.float32)
    return ids, [row[1] for row in found], matrix.reshape(len(found), dim)


def without_vectors(db: sqlite3.Connection) -> list[tuple[int, str]]:
    """Ids and texts of the chunks that have no vector."""
    sql = (
        "SELECT c.id, f.text FROM chunks AS c JOIN chunks_fts AS f ON f.rowid = c.id"
        " WHERE NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.id = c.id)"
    )
    return [(int(row[0]), str(row[1])) for row in db.execute(sql)]


def files(db: sqlite3.Connection, paths: Sequence[str] | None) -> dict[str, FileSignature]:
    """What the last sync saw of each file (of `paths` only, when given)."""
    sql = "SELECT path, mtime_ns, size, sha256, text FROM files"
    if paths is None:
        found = db.execute(sql).fetchall()
    else:
        found = [row for batch in batches(paths) for row in _select_in(db, sql, batch)]
    return {
        str(path): FileSignature(str(path), int(mtime), int(size), str(sha), bool(text))
        for path, mtime, size, sha, text in found
    }


def _select_in(db: sqlite3.Connection, sql: str, paths: Sequence[str]) -> list[tuple[Any, ...]]:
    marks = ",".join("?" * len(paths))
    return db.execute(f"{sql} WHERE path IN ({marks})", paths).fetchall()


def digests(db: sqlite3.Connection, sources: Sequence[str]) -> dict[str, str]:
    """The digest each of `sources` was written at (absent: never written)."""
    found: dict[str, str] = {}
    for batch in batches(sources):
        marks = ",".join("?" * len(batch))
        sql = f"SELECT source, digest FROM sources WHERE source IN ({marks})"
        found.update({str(s): str(d) for s, d in db.execute(sql, batch)})
    return found


def last_line(db: sqlite3.Connection, source: str) -> int | None:
    """Where the source's last chunk starts (None when it has none)."""
    sql = "SELECT max(start_line) FROM chunks WHERE source = ?"
    found = db.execute(sql, (source,)).fetchone()[0]
    return None if found is None else int(found)


def scope_counts(db: sqlite3.Connection) -> dict[str, int]:
    """Chunks per scope."""
    found = db.execute("SELECT scope, count(*) FROM chunks GROUP BY scope")
    return {str(scope): int(count) for scope, count in found}


def kind_counts(db: sqlite3.Connection) -> dict[str, int]:
    """Chunks per kind, plus "files" and "vectors"."""
    kinds = db.execute("SELECT kind, count(*) FROM chunks GROUP BY kind").fetchall()
    counts = {str(kind): int(n) for kind, n in kinds}
    counts["files"] = scalar(db, "SELECT count(*) FROM files")
    counts["vectors"] = scalar(db, "SELECT count(*) FROM vectors")
    return counts


def scalar(db: sqlite3.Connection, sql: str) -> int:
    return int(db.execute(sql).fetchone()[0])
