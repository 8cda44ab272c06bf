"""The index database: one SQLite file (WAL) holding chunks, their FTS5 text, vectors and the
signatures of the files they came from. Never the source of truth (`bot.index`).

    records.py       what goes in and comes out: `SourceUpdate`, `FileSignature`,
                     `FileClaims`, `ChunkRow`, `Written`
    database.py      the file: its tables and schema version, opening it, `scope_tag`
    writes.py        sources' chunks replaced, files' claims recorded, orphans deleted
    reads.py         the FTS5 MATCH within scopes and times, rows, vectors, signatures
    index_store.py   `IndexStore`: the one connection, its lock, chunks per scope
"""

from bot.index.store.index_store import IndexStore
from bot.index.store.records import ChunkRow, FileClaims, FileSignature, SourceUpdate, Written

__all__ = ["ChunkRow", "FileClaims", "FileSignature", "IndexStore", "SourceUpdate", "Written"]
