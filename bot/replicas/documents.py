"""`PgDocuments`: the workspace's documents (`bot.storage.files.Documents`) in one table every
replica shares, `mnemo_documents`: a row per document, keyed by its path relative to the
workspace (`memory/MEMORY.md`, `sessions/telegram_1001.json`), its bytes as they were written.

Every change takes a new `version` from one sequence, so a version is never reused, not even
by a document deleted and made again: a cache that keys on it never serves an old text. Its
`Signature` reads like a file's stat: `(0, size, updated_at in ns, version)`, so what takes a
file's mtime for the time of its text (the index) takes the time of its last change. An
append is one UPDATE that adds to the body; `write_if` is one UPDATE on the version read, so a
change made meanwhile by another replica or by `python -m bot memory edit` is refused, not
overwritten. Read-modify-writes hold the shared path locks (`bot.replicas.locks`), as with
files.

A call that finds the database away raises `StoreAway`: a turn that meets it is tried again
once the database is back (`bot.replicas.queue`), rather than answered with an apology.

The stores call documents from worker threads (and, for a version, from the event loop), as they
call file I/O: so this side speaks psycopg's blocking pool, its own, beside the replica's async
one.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import BinaryIO

from psycopg import Connection, OperationalError
from psycopg_pool import ConnectionPool, PoolTimeout

from bot.errors import StoreAway
from bot.replicas.database import pool_options
from bot.storage.files import Signature

SCHEMA_LOCK = 0x6D6E656D6F64  # "mnemod": one replica makes the table at a time
SCHEMA = """
CREATE SEQUENCE IF NOT EXISTS mnemo_document_versions;
CREATE TABLE IF NOT EXISTS mnemo_documents (
    path       text PRIMARY KEY,
    body       bytea NOT NULL,
    version    bigint NOT NULL DEFAULT nextval('mnemo_document_versions'),
    updated_at timestamptz NOT NULL DEFAULT now()
);
"""
_NEXT = "nextval('mnemo_document_versions')"


def open_documents(
    url: str, root: Path, *, max_size: int = 4, stalled_after: float | None = None
) -> PgDocuments:
    """The documents on the database at `url`, for a workspace at `root` (`connect` first);
    `stalled_after`: as `bot.replicas.database.session_options`."""
    pool = ConnectionPool(
        url,
        check=ConnectionPool.check_connection,
        **pool_options(max_size=max_size, stalled_after=stalled_after),
    )
    return PgDocuments(pool, root)


@dataclass(eq=False)
class PgDocuments:
    pool: ConnectionPool
    root: Path

    def connect(self) -> None:
        """Open the pool and make the table, once, whichever replica comes first."""
        self.pool.open(wait=True)
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            conn.execute(SCHEMA)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except (OperationalError, PoolTimeout) as exc:
            raise StoreAway(f"the shared database is unreachable: {type(exc).__name__}") from exc

    def key(self, path: Path) -> str:
        """The document's key: its path relative to the workspace (as given, made absolute, or
        with its links resolved, as a caller may have made it)."""
        root = self.root
        for mine, base in ((path, root), (path.absolute(), root.absolute())):
            if mine.is_relative_to(base):
                relative = mine.relative_to(base).as_posix()
                return "" if relative == "." else relative
        if path.resolve().is_relative_to(root.resolve()):
            return self.key(root / path.resolve().relative_to(root.resolve()))
        raise ValueError(f"{path} is not in the workspace {root}")

    def path_of(self, key: str) -> Path:
        return self.root / key

    def version(self, path: Path) -> Signature | None:
        with self._connection() as conn:
            row = conn.execute(
                "SELECT octet_length(body), "
                "(extract(epoch FROM updated_at) * 1000000)::bigint * 1000, version "
                "FROM mnemo_documents WHERE path = %s",
                (self.key(path),),
            ).fetchone()
        return None if row is None else (0, row[0], row[1], row[2])

    def read(self, path: Path) -> bytes | None:
        with self._connection() as conn:
            row = conn.execute(
                "SELECT body FROM mnemo_documents WHERE path = %s", (self.key(path),)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def open(self, path: Path) -> BinaryIO:
        data = self.read(path)
        if data is None:
            raise FileNotFoundError(str(path))
        return io.BytesIO(data)

    def write(self, path: Path, data: bytes) -> None:
        with self._connection() as conn:
            conn.execute(
                "INSERT INTO mnemo_documents (path, body) VALUES (%s, %s) ON CONFLICT (path) "
                f"DO UPDATE SET body = EXCLUDED.body, version = {_NEXT}, updated_at = now()",
                (self.key(path), data),
            )

    def write_if(self, path: Path, data: bytes, expected: Signature | None) -> bool:
        key = self.key(path)
        with self._connection() as conn:
            if expected is None:
                cursor = conn.execute(
                    "INSERT INTO mnemo_documents (path, body) VALUES (%s, %s) "
                    "ON CONFLICT (path) DO NOTHING",
                    (key, data),
                )
            else:
                cursor = conn.execute(
                    f"UPDATE mnemo_documents SET body = %s, version = {_NEXT}, updated_at = now() "
                    "WHERE path = %s AND version = %s",
                    (data, key, expected[3]),
                )
            return cursor.rowcount == 1

    def append(self, path: Path, data: bytes, *, durable: bool = True) -> None:
        with self._connection() as conn:  # durable either way: the commit is
            conn.execute(
                "INSERT INTO mnemo_documents (path, body) VALUES (%s, %s) ON CONFLICT (path) "
                "DO UPDATE SET body = mnemo_documents.body || EXCLUDED.body, "
                f"version = {_NEXT}, updated_at = now()",
                (self.key(path), data),
            )

    def listing(self, folder: Path, pattern: str) -> list[Path]:
        prefix = self.key(folder)
        prefix = f"{prefix}/" if prefix else ""
        ending = re.split(r"[*?[\]]", pattern)[-1]  # what every match ends with: asked first
        names = (key[len(prefix) :] for key in self.keys(prefix, ending))
        depth = pattern.count("/")  # a `*` matches no "/": a name as deep as the pattern
        found = (n for n in names if n.count("/") == depth and fnmatchcase(n, pattern))
        return sorted(self.path_of(prefix + name) for name in found)

    def walk(self, folder: Path) -> list[Path]:
        prefix = self.key(folder)
        return sorted(self.path_of(key) for key in self.keys(f"{prefix}/" if prefix else ""))

    def keys(self, prefix: str = "", ending: str = "") -> Iterator[str]:
        """Every document's key that starts with `prefix` (those under a folder: `memory/`)
        and ends with `ending`."""
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT path FROM mnemo_documents WHERE starts_with(path, %s) "
                "AND right(path, %s) = %s ORDER BY path",
                (prefix, len(ending), ending),
            ).fetchall()
        return (str(row[0]) for row in rows)

    def move(self, source: Path, target: Path) -> None:
        with self._connection() as conn:
            cursor = conn.execute(
                f"UPDATE mnemo_documents SET path = %s, version = {_NEXT}, updated_at = now() "
                "WHERE path = %s",
                (self.key(target), self.key(source)),
            )
        if cursor.rowcount != 1:
            raise FileNotFoundError(str(source))

    def delete(self, path: Path) -> None:
        with self._connection() as conn:
            conn.execute("DELETE FROM mnemo_documents WHERE path = %s", (self.key(path),))
