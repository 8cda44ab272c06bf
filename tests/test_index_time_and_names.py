"""Questions about time and people: a dated query puts the chunks of that time first, and a
name finds the turns of the person who said it (a group's `Name: text`)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.conversation.speakers import line
from bot.index import Exchange, MemoryIndex
from bot.storage.workspace import Workspace

NOW = datetime(2026, 3, 18, 15, 30, tzinfo=UTC)
GROUP = "telegram:-100200"
TURNS = [  # (when, who, what)
    (datetime(2025, 5, 14, 10, 0, tzinfo=UTC), "Maria", "the flat on Elm street has a damp wall"),
    (datetime(2025, 9, 2, 10, 0, tzinfo=UTC), "Tom", "our flat needs a new boiler"),
    (datetime(2026, 1, 20, 10, 0, tzinfo=UTC), "Tom", "the flat rent goes up in spring"),
    (datetime(2026, 3, 17, 19, 0, tzinfo=UTC), "Ana", "booked the tickets for the concert"),
    (datetime(2026, 3, 10, 8, 0, tzinfo=UTC), "José", "the plumber comes on Friday"),
]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[MemoryIndex]:
    ws = Workspace(tmp_path)
    ws.memory_root.mkdir(parents=True)
    found = MemoryIndex(ws.memory_root, ws.index_dir)
    found.add_exchanges(
        [
            Exchange(GROUP, f"t{n}", line(who, what), "Noted.", GROUP, at)
            for n, (at, who, what) in enumerate(TURNS)
        ]
    )
    yield found
    found.close()


def first(index: MemoryIndex, query: str, *, now: datetime = NOW) -> str:
    hits = index.search(query, scopes=[GROUP], k=3, now=now)
    assert hits, query
    return hits[0].text


def test_a_dated_query_prefers_the_hits_of_that_time(index: MemoryIndex) -> None:
    assert "damp wall" not in first(index, "the flat")  # undated: by bm25
    assert "damp wall" in first(index, "the flat last May")
    assert "boiler" in first(index, "what about the flat in September 2025")


def test_a_date_alone_finds_what_was_said_then(index: MemoryIndex) -> None:
    assert "concert" in first(index, "what happened yesterday?")
    assert "plumber" in first(index, "anything on the 10th?")


def test_a_dated_query_still_finds_matches_from_other_times(index: MemoryIndex) -> None:
    hits = index.search("the boiler last week", scopes=[GROUP], k=3, now=NOW)
    assert any("boiler" in hit.text for hit in hits)


def test_the_date_is_read_against_the_time_asked(index: MemoryIndex) -> None:
    asked = datetime(2026, 1, 21, 9, 0, tzinfo=UTC)
    assert "rent goes up" in first(index, "the flat yesterday", now=asked)
    assert "damp wall" in first(index, "the flat yesterday", now=datetime(2025, 5, 15, tzinfo=UTC))


def test_a_dated_query_shows_that_time_first_even_when_other_times_match_better(
    index: MemoryIndex,
) -> None:
    """Nothing of the 10th mentions the flat; its chunks still come before the flat's."""
    hits = index.search("the flat on the 10th", scopes=[GROUP], k=3, now=NOW)
    assert "plumber" in hits[0].text
    assert any("flat" in hit.text for hit in hits[1:]), "other times still follow"


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("what did Maria say about the flat", "damp wall"),
        ("maria", "damp wall"),
        ("Maria's flat", "damp wall"),
        ("what did Tom say about the boiler", "boiler"),
        ("Jose and the plumber", "plumber"),  # diacritics folded
        ("josé", "plumber"),
    ],
)
def test_a_name_finds_the_turns_of_that_person(index: MemoryIndex, query: str, said: str) -> None:
    assert said in first(index, query)
