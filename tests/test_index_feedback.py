"""The second keyword pass: a question that names a person by a relation ("my sister") finds
the turn that names her, and through that name the turn that answers it; it comes after
every chunk the question's own words found, and only while the list has room."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.index import Exchange, MemoryIndex
from bot.index.keyword import KeywordSearch
from bot.index.query import query_terms
from bot.index.search import FEEDBACK_CHUNKS, feedback_chunks
from bot.storage.workspace import Workspace

NOW = datetime(2026, 3, 18, 15, 30, tzinfo=UTC)
CHAT = "telegram:42"
SAID = [
    "My sister Ruth is staying with us this weekend.",
    "My sister keeps sending me cat videos.",
    "Ruth broke a wrist snowboarding, six weeks in a cast.",
    "The gym was packed this morning.",
    "We finally cleaned out the garage.",
    "Saw a great documentary about octopuses.",
]
QUESTION = "What injury did my sister have?"


def exchanges(said: list[str]) -> list[Exchange]:
    start = NOW - timedelta(days=len(said))
    return [
        Exchange(CHAT, f"t{n}", text, "Noted.", CHAT, start + timedelta(days=n))
        for n, text in enumerate(said)
    ]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[MemoryIndex]:
    ws = Workspace(tmp_path)
    ws.memory_root.mkdir(parents=True)
    found = MemoryIndex(ws.memory_root, ws.index_dir)
    found.add_exchanges(exchanges(SAID))
    yield found
    found.close()


def test_the_words_of_the_best_match_find_the_second_hop(index: MemoryIndex) -> None:
    texts = [hit.text for hit in index.search(QUESTION, scopes=[CHAT], k=8, now=NOW)]
    answer = next((n for n, text in enumerate(texts) if "broke a wrist" in text), None)
    assert answer is not None, f"no word of the question is in the answer: {texts}"
    first_pass = [n for n, text in enumerate(texts) if "sister" in text]
    assert len(first_pass) == 2 and max(first_pass) < answer, "after what the question found"
    assert not any("gym" in text or "garage" in text for text in texts), "only what is shared"


def test_nothing_is_added_when_the_first_pass_fills_the_list(index: MemoryIndex) -> None:
    keywords = KeywordSearch(index.store)
    terms = query_terms(QUESTION)
    weights = keywords.weights(terms, [CHAT])
    found = keywords.candidates(terms, [CHAT], limit=50)
    assert len(found) == 2
    assert keywords.feedback(found, weights, [CHAT], limit=50), "room: the second hop"
    assert keywords.feedback(found, weights, [CHAT], limit=2) == [], "full: nothing"


def test_the_second_pass_adds_a_handful(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.memory_root.mkdir(parents=True)
    index = MemoryIndex(ws.memory_root, ws.index_dir)
    try:
        more = [f"Ruth called about plan number {n}." for n in range(2 * FEEDBACK_CHUNKS)]
        index.add_exchanges(exchanges([*SAID, *more, *(f"filler {n}" for n in range(40))]))
        keywords = KeywordSearch(index.store)
        terms = query_terms(QUESTION)
        found = keywords.candidates(terms, [CHAT], limit=50)
        weights = keywords.weights(terms, [CHAT])
        added = keywords.feedback(found, weights, [CHAT], limit=50)
        assert len(added) == FEEDBACK_CHUNKS
        assert not set(added) & set(found)
        many = keywords.feedback(found, weights, [CHAT], limit=200, most=feedback_chunks(200))
        assert len(many) >= 2 * FEEDBACK_CHUNKS, "all of Ruth: a section of 4,096 tokens has room"
    finally:
        index.close()


def test_a_speaker_label_or_a_time_finds_nothing_more(tmp_path: Path) -> None:
    """In a small index "User" and "Assistant" are in half its chunks, not most: still no
    bridge, as they say who speaks, not what; nor is a note line's time."""
    ws = Workspace(tmp_path)
    ws.memory_root.mkdir(parents=True)
    notes = {
        "MEMORY.md": "# Pets\nThe cat is called Pixel.\n",
        "2026-11-19.md": "[09:15] User: plan the garden | Assistant: Tulips in March.\n",
        "2026-11-20.md": "[09:15] User: buy oat milk | Assistant: Oat milk it is.\n",
        "2026-11-21.md": "The plumber comes on Friday.\n",
    }
    for name, text in notes.items():
        (ws.memory_root / name).write_text(text)
    index = MemoryIndex(ws.memory_root, ws.index_dir)
    try:
        index.sync_files()
        hits = index.search("oat milk", scopes=[""], k=10, now=NOW)
        assert [hit.path for hit in hits] == ["2026-11-20.md"]
    finally:
        index.close()
