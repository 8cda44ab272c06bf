"""More evidence per token (issue 13): hits show the lines that matched, rare words weigh most,
touching chunks of a file are one hit, every hit is dated and says who spoke, and
`# Relevant Memory` spends its budget on what no better hit shows. A real index throughout."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.errors import DatasetError
from bot.eval.dataset import parse_dataset
from bot.eval.report import Answer, Retrieved, Section, score
from bot.index import Exchange, Hit, MemoryIndex
from bot.index.snippets import GAP, Terms, cut
from bot.llm.tokens import TokenCounter
from bot.memory.recall.relevant import (
    HEADER,
    distinct,
    fit,
    notes_line,
    render_relevant,
)
from bot.memory.recall.sides import once_each
from bot.storage.workspace import Workspace
from bot.tools.memory_get import parse_citation, read_slice, window
from tests.talk import relevant_hits

AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
COUNT = TokenCounter().count
FILLER = [
    "the weather was grey and we talked about the weekend plans for a while",
    "someone mentioned a podcast episode about old trains and the history of rail",
    "a long chat about which supermarket has the better bread on a Sunday morning",
    "we compared notes on the cheapest way to get to the airport at night",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.memory_root.mkdir(parents=True)
    return ws


@pytest.fixture
def index(workspace: Workspace) -> Iterator[MemoryIndex]:
    found = MemoryIndex(workspace.memory_root, workspace.index_dir)
    yield found
    found.close()


def note(workspace: Workspace, day: str, said: list[str]) -> None:
    lines = [f"[09:{n:02d}] User: {text} | Assistant: ok" for n, text in enumerate(said)]
    (workspace.memory_root / f"{day}.md").write_text("\n".join(lines) + "\n")


def filler(count: int, start: int = 0) -> list[str]:
    return [f"{FILLER[(start + n) % len(FILLER)]} ({start + n})" for n in range(count)]


def test_a_hit_shows_the_line_that_matched_not_its_whole_chunk(
    workspace: Workspace, index: MemoryIndex
) -> None:
    said = filler(12)
    said[5] = "the zeppelin museum in Friedrichshafen opens at nine, tickets are 12 euros"
    note(workspace, "2026-03-02", said)
    index.sync_files()

    [hit] = index.search("zeppelin museum", scopes=[""], k=3)

    assert hit.citation == "2026-03-02.md#L1-L12"  # the chunk's lines, as memory_get reads
    assert hit.text.split("\n") == [GAP, f"[09:05] User: {said[5]} | Assistant: ok", GAP]


def test_rare_words_choose_the_lines_and_the_order(
    workspace: Workspace, index: MemoryIndex
) -> None:
    for day in range(1, 7):
        note(workspace, f"2026-03-0{day}", [f"morning Ann, how are you on day {day}?", *filler(3)])
    said = [
        "morning Ann",
        *filler(3),
        "Ann finally bought the red kayak from the harbour shop today",
    ]
    note(workspace, "2026-03-09", said)
    index.sync_files()

    hits = index.search("Ann kayak", scopes=[""], k=4)

    assert hits[0].path == "2026-03-09.md"  # its best line holds the rare word
    assert "kayak" in hits[0].text and "morning Ann" not in hits[0].text
    assert all("kayak" not in hit.text for hit in hits[1:])


def test_chunks_of_one_file_that_overlap_are_one_hit_showing_each_line_once(
    workspace: Workspace, index: MemoryIndex
) -> None:
    said = filler(30)
    said[14] = "the marzipan cake recipe is in the blue folder"
    said[15] = "marzipan again: buy it at the corner shop"
    note(workspace, "2026-03-02", said)
    index.sync_files()
    chunks = index.store.rows(
        dict.fromkeys(index.store.match('"marzipan"', [""], limit=9, ranked=True), 0.0),
        [""],
        text=True,
    )
    assert len(chunks) == 2, "the test needs the matching lines in both chunks' overlap"

    [hit] = index.search("marzipan", scopes=[""], k=5)

    first, last = sorted(chunks.values(), key=lambda row: row.start_line)
    assert (hit.start_line, hit.end_line) == (first.start_line, last.end_line)
    assert hit.text.count("marzipan cake") == 1 and hit.text.count("corner shop") == 1


def test_every_line_of_relevant_memory_is_dated_and_says_who_spoke(
    workspace: Workspace, index: MemoryIndex
) -> None:
    note(workspace, "2026-02-14", ["the violin lesson moved to Thursday"])
    index.add_exchange(Exchange("tg:-5", "t1", "Ann: who has the violin?", "Ben does.", "g", AT))
    index.sync_files()

    hits = index.search("violin", scopes=["", "g"], k=5)
    section = render_relevant(hits, k=5, budget=400, count=COUNT)

    assert section.splitlines() == [
        HEADER,
        notes_line(""),  # the owner's daily notes are in memory/ itself
        "## 2026-02-14",
        "- [L1-L1] User: the violin lesson moved to Thursday | Assistant: ok",
        "## 2026-03-02",
        "- Ann: who has the violin? | Assistant: Ben does.",
    ]


def hit(path: str, text: str, at: datetime, *, kind: str = "note", lines: int = 1) -> Hit:
    return Hit(path, lines, lines, text, 0.5, kind, "", at)


def test_a_day_is_one_heading_and_the_notes_folder_is_named_once() -> None:
    march, feb = datetime(2026, 3, 2, 9, tzinfo=UTC), datetime(2026, 2, 14, 9, tzinfo=UTC)
    note = "chats/tg%3A-5/2026-03-02.md"
    hits = [  # best first, as the index gives them
        hit(note, "[09:04] User: Ann: the kayak is at the pier | Assistant: ok", march, lines=3),
        hit("MEMORY.md", "- Ann owns a red kayak.", feb, kind="memory", lines=7),
        hit(
            "sessions/tg%3A-5#t9",
            "User: Ann: kayak keys?\nAssistant: Sure: in the shed.",
            march,
            kind="exchange",
        ),
        hit(note, "[09:30] User: Ben: I sold my\n…\n[09:40] User: Ben: kayak", march, lines=9),
        hit("2026-03-02.md", "[08:00] User: kayak? | Assistant: yes", march, lines=2),
    ]

    section, shown = fit(hits, k=10, budget=400, count=COUNT)

    assert shown == hits
    assert section.splitlines() == [
        HEADER,
        notes_line("chats/tg%3A-5/"),  # the best note's folder, once
        "## 2026-02-14",  # days in order, whatever the hits' rank
        "- [MEMORY.md#L7-L7] - Ann owns a red kayak.",  # another file: its whole citation
        "## 2026-03-02",  # each day once
        "- [L3-L3] Ann: the kayak is at the pier | Assistant: ok",
        "- Ann: kayak keys? | Assistant: Sure: in the shed.",  # an exchange: no file to cite
        "- [L9-L9] Ben: I sold my",  # a hit's lines under its first, "…" where some were left out
        "  … Ben: kayak",
        "- [2026-03-02.md#L2-L2] User: kayak? | Assistant: yes",  # a note of another folder
    ]


def test_an_item_is_cited_by_its_id_for_fewer_tokens_than_its_fact() -> None:
    """`[s-8cf2e8c86d]`, which memory_get reads, not the file's whole path (~31 tokens): a
    citation that costs less than the fact it cites."""
    fact = "Ann has been learning to paint watercolours with her aunt since the spring of 2024"
    path = "chats/telegram%3A-1001234567/items/semantic.jsonl#s-8cf2e8c86d"
    section, _ = fit([hit(path, fact, AT, kind="item")], k=10, budget=400, count=COUNT)

    [line] = [line for line in section.splitlines() if fact in line]
    assert line == f"- [s-8cf2e8c86d] {fact}"
    assert COUNT(line) - COUNT(fact) < min(COUNT(fact), COUNT(f"- [{path}#L1-L1] ") / 2)
    assert parse_citation("s-8cf2e8c86d").item == "s-8cf2e8c86d"


def test_an_exchange_and_its_note_line_show_its_words_once() -> None:
    """A long message: its note line is cut (`…`) and its exchange's snippet a window, so
    neither holds the other; the section still shows each side once."""
    march = datetime(2026, 3, 2, 9, tzinfo=UTC)
    asked = "Emi: It sounds like you had the full basketball experience at the arena last night"
    answered = "Elise: We sat high up but the noise was unreal, and the team won in overtime"
    other = "[09:08] User: Emi: Did you get the tickets for the game on Sunday? | Assistant: ok"
    hits = [
        hit("sessions/tg%3A-5#t9", f"User: {asked}, tell me more\n…", march, kind="exchange"),
        hit(
            "chats/tg%3A-5/2026-03-02.md",
            f"[09:06] User: {asked}… | Assistant: {answered}\n{other}",
            march,
            lines=3,
        ),
        hit(
            "sessions/tg%3A-5#t10",
            f"User: {asked}, tell me more\nAssistant: {answered}, and more",
            march,
            kind="exchange",
        ),
    ]

    section, shown = fit(once_each(hits), k=10, budget=400, count=COUNT)

    assert section.count("the full basketball experience") == 1
    assert section.count("the noise was unreal") == 1
    assert "Did you get the tickets" in section
    assert len(shown) == 2  # the third hit said nothing new


def test_a_side_that_said_nothing_is_not_shown() -> None:
    """A message no one answered (or an answer to nothing) costs no empty label."""
    march = datetime(2026, 3, 2, 9, tzinfo=UTC)
    note = "chats/tg%3A-5/2026-03-02.md"
    hits = [
        hit(note, "[09:04] User: Ann: the kayak is at the pier | Assistant: ", march, lines=3),
        hit(note, "[09:06] User:  | Assistant: Sure: the kayak is red", march, lines=4),
        hit("sessions/tg%3A-5#t9", "User: Ann: kayak keys?\nAssistant:", march, kind="exchange"),
        hit("sessions/tg%3A-5#t8", "User:\nAssistant: the kayak", march, kind="exchange"),
    ]

    section, _ = fit(hits, k=10, budget=400, count=COUNT)

    assert section.splitlines()[3:] == [
        "- [L3-L3] Ann: the kayak is at the pier",
        "- [L4-L4] Assistant: Sure: the kayak is red",
        "- Ann: kayak keys?",
        "- Assistant: the kayak",
    ]


def test_the_days_and_the_notes_line_are_paid_for_once() -> None:
    day = datetime(2026, 3, 2, 9, tzinfo=UTC)
    hits = [hit("2026-03-02.md", f"[09:0{n}] User: kayak trip {n}", day, lines=n) for n in range(7)]
    hits = hits[1:]  # lines from 1
    section, shown = fit(hits, k=10, budget=1000, count=COUNT)

    assert shown == hits
    assert section.splitlines()[:4] == [
        HEADER,
        notes_line(""),
        "## 2026-03-02",
        "- [L1-L1] User: kayak trip 1",
    ]
    assert section.count("2026-03-02") == 1
    for budget in range(10, 80):  # never over, whatever is left for the last hit
        tight, fitted = fit(hits, k=10, budget=budget, count=COUNT)
        assert COUNT(tight) <= budget
        assert fitted == [] or tight.startswith(f"{HEADER}\n{notes_line('')}\n## 2026-03-02\n")


def test_memory_get_reads_every_line_the_section_cites(
    workspace: Workspace, index: MemoryIndex
) -> None:
    folder = workspace.memory_root / "chats" / "tg%3A-5"
    folder.mkdir(parents=True)
    for day in ("2026-03-01", "2026-03-02"):
        said = filler(20)
        said[3] = f"Ann: the harbour kayak rental on {day} costs 30 euros"
        said[16] = f"Ben: kayak paddles for {day} are in the shed"
        lines = [f"[09:{n:02d}] User: {text} | Assistant: ok" for n, text in enumerate(said)]
        (folder / f"{day}.md").write_text("\n".join(lines) + "\n")
    index.sync_files()

    hits = index.search("kayak", scopes=["tg:-5"], k=5)
    section = render_relevant(hits, k=5, budget=600, count=COUNT)

    assert section.splitlines()[1] == notes_line("chats/tg%3A-5/")
    read = 0
    for shown in relevant_hits(section):
        cited, _, text = shown.text[3:].partition("] ")
        day = shown.day.removeprefix("## ")
        citation = parse_citation(f"chats/tg%3A-5/{day}.md#{cited}")
        start, count = window({}, citation)
        found = read_slice(workspace.memory_root / citation.path, start, count)
        assert found is not None
        words = " ".join(text for _, text in found.lines)
        phrases = re.findall(r"(?:Ann|Ben): [^|…]*kayak[^|…]*", text)
        assert phrases and all(phrase.strip() in words for phrase in phrases)
        read += len(phrases)
    assert read == 4  # each day's two kayak lines, each read back


def test_a_word_every_line_holds_does_not_choose_the_lines() -> None:
    lines = [f"User: Ann: {text} | Assistant: ok" for text in filler(6)]
    lines[3] = (
        "User: Ann: the red kayak is back at the harbour, we took it on Sunday | Assistant: ok"
    )
    text = "\n".join(lines)
    terms = Terms.of({"ann": 3.0, "kayak": 1.0})  # the name weighs more, as a rare word would

    shown = cut(text, terms).text.split("\n")
    alone = cut(text, Terms.of({"ann": 3.0})).text.split("\n")

    assert shown == [GAP, lines[3], GAP]  # not every line because each names Ann
    assert alone == [lines[0], GAP]  # nothing tells the lines apart: the first, not all


def test_the_budget_goes_to_distinct_evidence_and_is_never_passed(
    workspace: Workspace, index: MemoryIndex
) -> None:
    said = [f"the kayak trip number {n} went along the {FILLER[n % 4]}" for n in range(20)]
    note(workspace, "2026-03-02", said)
    for n, text in enumerate(said):  # each exchange is also in the note: one fact, one line
        index.add_exchange(Exchange("tg:1", f"t{n}", text, "ok", "", AT))
    index.sync_files()

    hits = distinct(index.search("kayak trip", scopes=[""], k=60))
    shown = [line for hit in hits for line in hit.text.split("\n") if line != GAP]
    said_shown = [text for text in said if any(text in line for line in shown)]
    assert len(said_shown) == len(said)  # every fact is in some hit...
    assert sum(text in line for text in said for line in shown) == len(said)  # ...once

    for budget in (100, 250, 600):
        section = render_relevant(hits, k=60, budget=budget, count=COUNT)
        assert section.startswith(HEADER) and COUNT(section) <= budget


def test_the_evaluation_counts_every_token_of_the_section() -> None:
    dataset = parse_dataset(
        {
            "conversations": [
                {
                    "id": "c",
                    "speakers": {"user": "Daniel", "assistant": "Lucas"},
                    "sessions": [
                        {
                            "id": "s",
                            "date": "2026-03-02",
                            "turns": [
                                {"id": "x", "speaker": "user", "text": "hi"},
                            ],
                        },
                    ],
                }
            ],
            "questions": [
                {"conversation": "c", "question": "q?", "evidence": ["x"], "category": "c"}
            ],
        }
    )
    conversation = dataset.conversations[0]
    assert (conversation.name_of("user"), conversation.name_of("assistant")) == ("Daniel", "Lucas")
    section = Section(
        "# Relevant Memory\n- [a#L1-L2] 2026-03-02 · hi", (Retrieved("hi", frozenset({"x"})),)
    )
    answer = Answer(dataset.questions[0], (), 0.001, section)
    scored = score(answer, ks=[], budget=1024, count=len)
    assert (scored.at_budget, scored.budget_hits, scored.budget_tokens) == (
        1.0,
        1,
        len(section.text),
    )


def test_speakers_that_are_not_names_are_refused_with_the_field() -> None:
    raw = {
        "conversations": [
            {
                "id": "c",
                "speakers": {"user": ""},
                "sessions": [
                    {
                        "id": "s",
                        "date": "2026-03-02",
                        "turns": [{"id": "x", "speaker": "user", "text": "hi"}],
                    }
                ],
            }
        ],
        "questions": [{"conversation": "c", "question": "q?", "evidence": ["x"], "category": "c"}],
    }
    with pytest.raises(
        DatasetError, match=r"conversations\[0\]\.speakers\.user: expected a non-empty string"
    ):
        parse_dataset(raw)
