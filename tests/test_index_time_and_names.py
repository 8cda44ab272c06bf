"""Questions about time and people: a dated query puts the chunks of that time first, and a
name finds the turns of the person who said it (a group's `Name: text`)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
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


def test_a_dated_query_shows_that_time_first_even_when_other_times_match_better(
    index: MemoryIndex,
) -> None:
    """Nothing of the 10th mentions the flat; its chunks still come before the flat's."""
    hits = index.search("the flat on the 10th", scopes=[GROUP], k=3, now=NOW)
    assert "plumber" in hits[0].text
    assert any("flat" in hit.text for hit in hits[1:]), "other times still follow"


# ----------------------------------------------------------------------------- a name's weight

CHAT, BUSY = "telegram:-100400", "telegram:-100500"
GRACE_SAYS = [
    "hi everyone, long week",
    "the kids have a school play on Friday",
    "our heating broke again",
    "anyone watching the match tonight",
    "I finally fixed the bike",
    "thinking about a trip somewhere warm",
    "the garden needs work",
    "talk soon",
]


@pytest.fixture
def two_chats(tmp_path: Path) -> Iterator[MemoryIndex]:
    """Grace says nearly every line of her chat; a busier chat beside it talks of puppies
    all day and has no Grace: the whole index calls "grace" rare and "puppy" common."""
    ws = Workspace(tmp_path)
    ws.memory_root.mkdir(parents=True)
    found = MemoryIndex(ws.memory_root, ws.index_dir)
    day = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    turns = [(CHAT, "Grace", f"{said} ({n})") for n in range(3) for said in GRACE_SAYS]
    turns.append((CHAT, "James", "we adopted a puppy, a border collie called Scout"))
    turns += [(BUSY, "Ben", f"the puppy chewed shoe number {n}") for n in range(30)]
    found.add_exchanges(
        [
            Exchange(chat, f"t{n}", line(who, what), "Noted.", chat, day + timedelta(minutes=n))
            for n, (chat, who, what) in enumerate(turns)
        ]
    )
    yield found
    found.close()


def test_a_name_in_most_of_its_chat_does_not_outrank_the_rare_word_there(
    two_chats: MemoryIndex,
) -> None:
    hits = two_chats.search("Grace puppy", scopes=[CHAT], k=3, now=NOW)
    assert "Scout" in hits[0].text
    assert all(hit.scope == CHAT for hit in hits)


def test_a_snippet_leaves_out_the_lines_that_hold_only_the_chat_s_common_name(
    two_chats: MemoryIndex,
) -> None:
    said = "\n".join(line("Grace", text) for text in GRACE_SAYS)
    two_chats.add_document("long", f"{said}\n{line('James', 'the puppy is called Scout')}", CHAT)
    hits = two_chats.search("Grace puppy", scopes=[CHAT], k=8, now=NOW)
    long = next(hit for hit in hits if hit.path == "items/long")
    assert "Scout" in long.text
    assert long.text.count("Grace:") <= 1, "only the short line beside it, as context"


def test_in_a_chat_of_a_few_chunks_no_word_is_common(tmp_path: Path) -> None:
    """Two of three chunks is not a pattern: beside "violin", "recital" still finds both of
    its chunks."""
    ws = Workspace(tmp_path)
    ws.memory_root.mkdir(parents=True)
    index = MemoryIndex(ws.memory_root, ws.index_dir)
    for n, text in enumerate(["Mia's violin recital is on Friday", "recital tickets printed"]):
        index.add_document(f"d{n}", text, CHAT)
    index.add_document("d2", "the piano tuner is booked", CHAT)
    hits = index.search("the violin recital", scopes=[CHAT], k=3, now=NOW)
    index.close()
    assert {hit.path for hit in hits} == {"items/d0", "items/d1"}
