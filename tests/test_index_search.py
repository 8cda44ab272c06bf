"""Searching the index: hostile input, hybrid ranking, exchanges, documents, diversity."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.index import Exchange, MemoryIndex, Model2VecEmbedder
from bot.index.keyword import KeywordSearch
from bot.index.query import fts_expression, query_terms
from bot.index.snippets import SNIPPET_CHARS
from bot.index.store.database import scope_tag
from bot.storage.workspace import Workspace
from tests.harness import SMALL_MODEL2VEC

MODEL = SMALL_MODEL2VEC
NOW = datetime.now(UTC)
FACTS = [
    "Mia practises the violin every evening before dinner.",
    "The car needs new winter tyres before December.",
    "Dentist appointment moved to Thursday at 3pm.",
    "Prefers oat milk in coffee, never sugar.",
    "The wifi password for the cabin is on the fridge.",
    "Quarterly tax return is due at the end of January.",
    "Booked flights to Lisbon for the spring holiday.",
    "Grandma Rose turns 90 in March; plan a party.",
]
HOSTILE = [
    '"',
    "*",
    "NEAR(",
    "NEAR(violin dinner, 2)",
    'violin" OR "*',
    "AND OR NOT",
    "text:violin",
    "scope_tag:s1",
    "^violin",
    "'; DROP TABLE chunks; --",
    "((((",
    "-violin",
    "🙂 🎻",
    "\x00",
    "",
    "   ",
    "violin " * 5000,
]


@pytest.fixture(scope="module")
def embedder() -> Model2VecEmbedder:
    return Model2VecEmbedder(MODEL)


def facts_workspace(root: Path) -> Workspace:
    ws = Workspace(root)
    ws.memory_root.mkdir(parents=True)
    for n, fact in enumerate(FACTS, start=1):
        (ws.memory_root / f"2026-11-{n:02d}.md").write_text(f"[09:00] User: {fact}\n")
    return ws


@pytest.fixture
def keyword_index(tmp_path: Path) -> Iterator[MemoryIndex]:
    ws = facts_workspace(tmp_path / "ws")
    index = MemoryIndex(ws.memory_root, ws.index_dir)
    index.sync_files()
    yield index
    index.close()


@pytest.fixture
def hybrid_index(tmp_path: Path, embedder: Model2VecEmbedder) -> Iterator[MemoryIndex]:
    ws = facts_workspace(tmp_path / "hybrid")
    index = MemoryIndex(ws.memory_root, ws.index_dir, embedder=embedder)
    index.sync_files()
    yield index
    index.close()


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(keyword_index: MemoryIndex, query: str) -> None:
    hits = keyword_index.search(query, scopes=[""], k=5)
    if "violin" in query.lower():
        assert hits[0].path == "2026-11-01.md", "its words are still searched"
        assert all("violin" not in h.text for h in hits[1:]), "the rest: a second pass's"


def test_query_words_are_quoted_and_ored() -> None:
    terms = query_terms('What is "NEAR(violin*" AND the_cat: OR dinner?')
    assert terms == ["near", "violin", "cat", "dinner"]
    assert fts_expression(terms) == '"near" OR "violin" OR "cat" OR "dinner"'
    assert query_terms("the and of") == ["the", "and", "of"], "only stop words: keep them"


def test_single_letters_are_no_query_terms() -> None:
    """The "s" of "Daniel's" and the "t" of "can't" would make a snippet seek every word
    that starts with them; a digit is a word, and a lone letter stays when nothing else is."""
    assert query_terms("What can't Daniel's sister eat on day 3?") == [
        "daniel",
        "sister",
        "eat",
        "day",
        "3",
    ]
    assert query_terms("x") == ["x"]


PARAPHRASES = {
    "which musical instrument does my daughter play?": "2026-11-01.md",
    "when should I see the tooth doctor": "2026-11-03.md",
    "where are we travelling on vacation": "2026-11-07.md",
}


def test_hybrid_finds_paraphrases_that_keywords_miss(
    keyword_index: MemoryIndex, hybrid_index: MemoryIndex
) -> None:
    for query, path in PARAPHRASES.items():
        keyword = [h.path for h in keyword_index.search(query, scopes=[""], k=3)]
        hybrid = [h.path for h in hybrid_index.search(query, scopes=[""], k=3)]
        assert path not in keyword, query
        assert hybrid[0] == path, query


def test_hybrid_keeps_exact_keyword_matches_on_top(hybrid_index: MemoryIndex) -> None:
    assert hybrid_index.search("wifi password", scopes=[""], k=3)[0].path == "2026-11-05.md"


def test_an_exchange_is_indexed_with_its_session_path(keyword_index: MemoryIndex) -> None:
    turn = Exchange(
        "telegram:42", "turn-7", "Where is the spare key?", "Under the blue pot.", "", NOW
    )
    keyword_index.add_exchange(turn)
    keyword_index.add_exchange(turn)  # the same turn again replaces it

    hits = keyword_index.search("spare key", scopes=[""], k=5)

    assert [h.citation for h in hits] == ["sessions/telegram%3A42#turn-7#L1-L2"]
    assert hits[0].text == "User: Where is the spare key?\nAssistant: Under the blue pot."
    assert hits[0].kind == "exchange"
    assert keyword_index.stats().chunks["exchange"] == 1


def test_a_document_is_replaced_by_its_id_and_removed(keyword_index: MemoryIndex) -> None:
    keyword_index.add_document("s-1", "Likes green tea.", "", salience=0.9)
    keyword_index.add_document("s-1", "Likes jasmine tea.", "")

    assert [h.text for h in keyword_index.search("tea", scopes=[""], k=5)] == ["Likes jasmine tea."]
    keyword_index.remove_document("s-1")
    assert keyword_index.search("tea", scopes=[""], k=5) == []


def test_one_long_note_does_not_fill_every_slot(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.memory_root.mkdir(parents=True)
    lines = [f"[10:{n:02d}] User: garden idea {n}: " + "plant roses " * 30 for n in range(40)]
    (ws.memory_root / "2026-05-01.md").write_text("\n".join(lines))
    (ws.memory_root / "MEMORY.md").write_text("The garden has one apple tree.\n")
    index = MemoryIndex(ws.memory_root, ws.index_dir)
    index.sync_files()

    hits = index.search("garden roses", scopes=[""], k=5)
    index.close()

    assert 1 <= [h.path for h in hits].count("2026-05-01.md") <= 2
    assert "MEMORY.md" in [h.path for h in hits]
    assert all(len(h.text) <= SNIPPET_CHARS + 2 for h in hits)
    assert all("garden" in h.text for h in hits)


def test_newer_and_more_salient_chunks_win_near_ties(keyword_index: MemoryIndex) -> None:
    old = NOW - timedelta(days=365)
    keyword_index.add_document("a", "Piano lesson on Monday.", "", at=old)
    keyword_index.add_document("b", "Piano lesson on Friday.", "", at=NOW)
    keyword_index.add_document("c", "Chess club on Monday.", "", at=NOW, salience=0.1)
    keyword_index.add_document("d", "Chess club on Friday.", "", at=NOW, salience=0.9)

    assert keyword_index.search("piano lesson", scopes=[""], k=1)[0].path == "items/b"
    assert keyword_index.search("chess club", scopes=[""], k=1)[0].path == "items/d"


def test_a_large_index_scores_only_the_rarer_words(keyword_index: MemoryIndex) -> None:
    """With a budget of 3 postings, "walk" (in 10 chunks) is too common to score."""
    for n in range(10):
        extra = " with a rare heron" if n == 4 else ""
        keyword_index.add_document(f"walk-{n}", f"Morning walk number {n}{extra}.", "")
    keywords = KeywordSearch(keyword_index.store, budget=3)

    def paths(terms: list[str]) -> list[str]:
        ids = keywords.candidates(terms, [""], limit=5)
        rows = keyword_index.store.rows(ids, [""], text=False)
        return [rows[i].path for i in ids]

    assert paths(["walk", "heron"]) == ["items/walk-4"]
    assert paths(["walk", "morning"]) == [f"items/walk-{n}" for n in range(9, 4, -1)], "newest"
    assert keywords.vague(["walk", "morning"], [""]) and not keywords.vague(["walk", "heron"], [""])
    assert not keywords.vague([], [""])


def test_a_scope_tag_as_a_query_word_finds_nothing(keyword_index: MemoryIndex) -> None:
    """Words are matched in the text only: the tag FTS5 files each chunk's scope under is
    no word of it, though a query may spell it out."""
    tag = scope_tag("")
    keywords = KeywordSearch(keyword_index.store)
    assert keyword_index.store.document_frequency(tag) == 0
    assert keywords.candidates([tag], [""], limit=5) == []
    assert keywords.candidates([tag, "violin"], [""], limit=5) != []
