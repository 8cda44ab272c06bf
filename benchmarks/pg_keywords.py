"""The index's keyword search on PostgreSQL full text, to weigh its ranking against SQLite FTS5
(`benchmarks/pg_index_gate.py`, its only user beside its test). Not the product's index:
replicated mode keeps a SQLite index of its own per replica, derived from the shared documents;
the figures that decide are in benchmarks/README.md, "pg_index_gate".

`PgChunks` holds the same chunks as an `IndexStore` (`load` copies them) in `mnemo_chunks`:
a `tsvector` of each text (`CONFIGURATIONS`: English Snowball stemming, with or without its
stop words) under a GIN index, and answers what `bot.index.keyword.KeywordSearch` asks of a
store. A MATCH is the OR of the query's words (`to_tsquery(config, 'a | b')`), ranked by one of
`RANKINGS` (PostgreSQL has no bm25: `ts_rank` counts how often the words occur, with no
weight for how rare a word is; `ts_rank_cd` how close together they are). Everything else is
the embedded index's own: which words are searched (`KeywordSearch`: the telling terms, the
second pass, a named time), fusion, tie-breaks, diversity and snippets (`KeywordSearch.gather`
and `bot.index.search`, as `MemoryIndex.search` calls them), so a search differs from
`MemoryIndex.search` (keyword only) in its candidates alone.

The chunk counts per scope are taken once, at `load`: the table is written only there.
Blocking; one connection, which psycopg serialises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import astuple
from datetime import datetime
from typing import Any

import psycopg

from bot.index.keyword import Asked, KeywordSearch
from bot.index.query import expression_terms
from bot.index.search import Hit, Wait
from bot.index.store import ChunkRow

# "english" is PostgreSQL's own; "mnemo_english" stems as it does but keeps its stop words
# ("now", "before", "after", "up": a question's telling word; the query drops its own
# stop words first, `bot.index.query`)
CONFIGURATIONS = ("english", "mnemo_english")
SCHEMA = """
DROP TABLE IF EXISTS mnemo_chunks;
DROP TEXT SEARCH CONFIGURATION IF EXISTS mnemo_english;
DROP TEXT SEARCH DICTIONARY IF EXISTS mnemo_stem;
CREATE TEXT SEARCH DICTIONARY mnemo_stem (TEMPLATE = snowball, LANGUAGE = english);
CREATE TEXT SEARCH CONFIGURATION mnemo_english (COPY = english);
ALTER TEXT SEARCH CONFIGURATION mnemo_english
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH mnemo_stem;
CREATE TABLE mnemo_chunks (
    id         bigint PRIMARY KEY,
    path       text NOT NULL,
    start_line integer NOT NULL,
    end_line   integer NOT NULL,
    scope      text NOT NULL,
    kind       text NOT NULL,
    at         double precision NOT NULL,
    salience   double precision NOT NULL,
    text       text NOT NULL,
    origin     text NOT NULL,
    words      tsvector GENERATED ALWAYS AS (to_tsvector('{config}', text)) STORED
);
"""
INDEXES = """
CREATE INDEX mnemo_chunks_words ON mnemo_chunks USING gin (words);
CREATE INDEX mnemo_chunks_scope ON mnemo_chunks (scope, at);
ANALYZE mnemo_chunks;
"""
# the score of a chunk (`words`) for a query (`q`), higher first; normalization 1 divides by
# 1 + the log of the chunk's length, as bm25 favours short chunks
RANKINGS = {
    "ts_rank": "ts_rank(words, q)",
    "ts_rank/len": "ts_rank(words, q, 1)",
    "ts_rank_cd": "ts_rank_cd(words, q)",
    "ts_rank_cd/len": "ts_rank_cd(words, q, 1)",
}
COLUMNS = "id, path, start_line, end_line, scope, kind, at, salience"

Connection = psycopg.Connection[tuple[Any, ...]]


class PgChunks:
    """A `KeywordStore` (`bot.index.keyword`) on PostgreSQL: the chunks, matched and ranked
    there by `ranking` (a key of `RANKINGS`)."""

    def __init__(
        self, conn: Connection, *, ranking: str = "ts_rank", config: str = "english"
    ) -> None:
        if config not in CONFIGURATIONS:
            raise ValueError(f"no text search configuration {config!r}: {CONFIGURATIONS}")
        self.conn = conn
        self.score = RANKINGS[ranking]
        self.config = config
        self._scope_counts: Counter[str] = Counter()

    def load(self, rows: Iterable[ChunkRow]) -> None:
        """The table made anew holding `rows`, then indexed and analysed."""
        counts: Counter[str] = Counter()
        with self.conn.transaction():
            self.conn.execute(SCHEMA.format(config=self.config))
            copying = f"COPY mnemo_chunks ({COLUMNS}, text, origin) FROM STDIN"
            with self.conn.cursor().copy(copying) as copy:
                for row in rows:
                    counts[row.scope] += 1
                    copy.write_row(astuple(row))  # COLUMNS' order, then text and origin
            self.conn.execute(INDEXES)
        self._scope_counts = counts

    @property
    def size(self) -> int:
        return sum(self._scope_counts.values())

    def chunks_in(self, scopes: Sequence[str]) -> int:
        return sum(self._scope_counts.get(scope, 0) for scope in set(scopes))

    def document_frequency(self, term: str, scopes: Sequence[str] | None = None) -> int:
        """How many chunks hold the word (as the `english` configuration stems it; none for
        one of its stop words)."""
        sql = "SELECT count(*) FROM mnemo_chunks WHERE words @@ to_tsquery(%s::regconfig, %s)"
        if scopes is None:
            found = self.conn.execute(sql, (self.config, term)).fetchone()
        else:
            within = (self.config, term, list(scopes))
            found = self.conn.execute(sql + " AND scope = ANY(%s)", within).fetchone()
        return int(found[0]) if found else 0

    def match(
        self,
        expression: str,
        scopes: Sequence[str],
        *,
        limit: int,
        ranked: bool,
        between: tuple[float, float] | None = None,
    ) -> list[int]:
        """Chunk ids holding any of the expression's words within `scopes` (and the time
        `between`, epoch seconds, end exclusive): best first by the ranking when `ranked`,
        else newest first."""
        terms = expression_terms(expression)
        if not terms or not scopes:
            return []
        order = f"{self.score} DESC, id" if ranked else "id DESC"
        window = " AND at >= %(start)s AND at < %(end)s" if between else ""
        sql = (
            f"SELECT id FROM mnemo_chunks, to_tsquery(%(config)s::regconfig, %(query)s) AS q"
            f" WHERE words @@ q AND scope = ANY(%(scopes)s){window} ORDER BY {order}"
            " LIMIT %(limit)s"
        )
        start, end = between or (0.0, 0.0)
        params = {
            "config": self.config,
            "query": " | ".join(terms),
            "scopes": list(scopes),
            "start": start,
            "end": end,
            "limit": limit,
        }
        return [int(row[0]) for row in self.conn.execute(sql, params)]

    def newest(
        self, scopes: Sequence[str], *, between: tuple[float, float], limit: int
    ) -> list[int]:
        sql = (
            "SELECT id FROM mnemo_chunks WHERE at >= %s AND at < %s AND scope = ANY(%s)"
            " ORDER BY at DESC, id DESC LIMIT %s"
        )
        return [int(row[0]) for row in self.conn.execute(sql, (*between, list(scopes), limit))]

    def rows(self, ids: Iterable[int], scopes: Sequence[str], *, text: bool) -> dict[int, ChunkRow]:
        wanted = list(dict.fromkeys(ids))
        if not wanted or not scopes:
            return {}
        column = "text" if text else "''"
        sql = (
            f"SELECT {COLUMNS}, {column}, origin FROM mnemo_chunks"
            " WHERE id = ANY(%s) AND scope = ANY(%s)"
        )
        found = self.conn.execute(sql, (wanted, list(scopes)))
        return {int(row[0]): ChunkRow(*row) for row in found}


class PgSearch:
    """`MemoryIndex.search` without an embedder (a `bot.index.search.Searcher`), its keyword
    candidates from PostgreSQL."""

    def __init__(self, chunks: PgChunks) -> None:
        self.chunks = chunks
        self.keywords = KeywordSearch(chunks)

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        k: int,
        wait: Wait = "all",
        now: datetime | None = None,
    ) -> list[Hit]:
        asked = Asked.read(query, scopes=scopes, k=k, now=now)
        return self.keywords.gather(asked).hits() if asked is not None else []
