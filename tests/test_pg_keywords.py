"""PostgreSQL full text as the index's keyword search (`benchmarks/pg_keywords.py`), over the
chunks of a real `MemoryIndex`: the chunk that answers comes first, a chat's chunks stay in
their chat, and a word PostgreSQL's English stop list drops is still searched with the
configuration that keeps it. Skipped without `MNEMO_TEST_PG` (`tests/pg.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest

from benchmarks.pg_keywords import Connection, PgChunks, PgSearch
from bot.index import MemoryIndex
from bot.storage.workspace import Workspace, encode_key
from tests.pg import pg_database

CHAT = "telegram:-100123"
NOTES = {
    "2026-11-01.md": "[09:00] User: The spare key is under the blue flowerpot by the door.",
    "2026-11-02.md": "[09:00] User: The car key is on the hook; the blue car is parked outside.",
    "2026-11-03.md": "[09:00] User: Dinner with Ana on Friday, she brings the wine.",
    "2026-11-04.md": "[09:00] User: The flowerpot needs watering twice a week.",
    "2026-11-05.md": "[09:00] User: I work in insurance now, after years in teaching.",
    f"chats/{encode_key(CHAT)}/2026-11-06.md": "[09:00] Bo: the spare key of the office is lost",
}


@pytest.fixture
def index(tmp_path: Path) -> Iterator[MemoryIndex]:
    workspace = Workspace(tmp_path / "ws")
    for path, text in NOTES.items():
        (workspace.memory_root / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace.memory_root / path).write_text(text + "\n")
    made = MemoryIndex(workspace.memory_root, workspace.index_dir)
    made.sync_files()
    yield made
    made.close()


@pytest.fixture
async def conn() -> AsyncIterator[Connection]:
    async with pg_database() as url:
        with psycopg.connect(url, autocommit=True) as connection:
            yield connection


def searched(conn: Connection, index: MemoryIndex, *, config: str) -> PgSearch:
    chunks = PgChunks(conn, config=config)
    chunks.load(index.store.every_row())
    return PgSearch(chunks)


async def test_the_chunk_that_answers_comes_first(conn: Connection, index: MemoryIndex) -> None:
    search = searched(conn, index, config="mnemo_english")
    hits = search.search("Where is the spare key?", scopes=[""], k=3)
    assert [hit.path for hit in hits][:1] == ["2026-11-01.md"]
    assert "flowerpot" in hits[0].text
    fts5 = index.search("Where is the spare key?", scopes=[""], k=3)
    assert hits[0].path == fts5[0].path


async def test_a_chat_s_chunks_stay_in_their_chat(conn: Connection, index: MemoryIndex) -> None:
    search = searched(conn, index, config="mnemo_english")
    owner = search.search("spare key office", scopes=[""], k=10)
    chat = search.search("spare key office", scopes=[CHAT], k=10)
    assert owner and all(hit.scope == "" for hit in owner)
    assert [hit.scope for hit in chat] == [CHAT]


async def test_a_word_postgresql_calls_a_stop_word_is_searched(
    conn: Connection, index: MemoryIndex
) -> None:
    """ "now" is in PostgreSQL's English stop list, not in the index's own."""
    kept = searched(conn, index, config="mnemo_english").search("now", scopes=[""], k=3)
    assert [hit.path for hit in kept] == ["2026-11-05.md"]
    dropped = searched(conn, index, config="english").search("now", scopes=[""], k=3)
    assert dropped == []


async def test_the_ranking_puts_more_of_the_words_first(
    conn: Connection, index: MemoryIndex
) -> None:
    """Ranked, the chunk holding both words comes before the newer one holding one of them
    (unranked, newest first, it is the other way round)."""
    chunks = PgChunks(conn, config="mnemo_english")
    chunks.load(index.store.every_row())

    def paths(ranked: bool) -> list[str]:
        found = chunks.match('"spare" OR "key"', [""], limit=5, ranked=ranked)
        rows = chunks.rows(found, [""], text=False)
        return [rows[i].path for i in found]

    assert paths(ranked=True) == ["2026-11-01.md", "2026-11-02.md"]
    assert paths(ranked=False) == ["2026-11-02.md", "2026-11-01.md"]
