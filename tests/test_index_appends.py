"""Appends are indexed as appends: a note or items file that only grew gives only its new part
to the index, and the index is then exactly the one a rebuild from the same files makes; any
other change is read whole."""

from __future__ import annotations

import os
import random
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.index import Chunker, MemoryIndex
from bot.index.memory_index import INDEX_FILE
from bot.index.sync.transcripts import TranscriptSource
from bot.memory.items.format import encode
from bot.memory.items.indexing import ItemSource
from bot.memory.items.rules import new_item
from bot.models import GLOBAL_SCOPE, MemoryItem, MemoryLayer
from bot.storage.workspace import Workspace

DAY = datetime(2026, 11, 20, 8, tzinfo=UTC)
NOTE = "2026-11-20.md"
ITEMS = "items/episodic/2026-11-20.jsonl"
WORDS = [
    *("garden", "tomato", "basil", "harbour", "ferry", "ticket", "violin", "lesson", "invoice"),
    *("router", "kettle", "lantern", "marble", "pepper", "saddle", "walnut", "velvet", "copper"),
    *("meadow", "quarry", "ribbon", "tunnel"),
]
QUERIES = ("garden tomato", "ferry ticket harbour", "violin", "walnut velvet", "copper quarry")
CHUNKER = Chunker(max_tokens=40)  # 160 characters: a chunk boundary every few lines


def open_index(ws: Workspace, folder: str = "index") -> MemoryIndex:
    return MemoryIndex(
        ws.memory_root,
        ws.root / folder,
        chunker=CHUNKER,
        readers=(TranscriptSource(ws.sessions_dir), ItemSource(ws.memory_root)),
    )


def stored(ws: Workspace, folder: str = "index") -> list[tuple[object, ...]]:
    """Every chunk the index file holds, as a rebuild would write it (ids aside)."""
    with sqlite3.connect(ws.root / folder / INDEX_FILE) as db:
        rows = db.execute(
            "SELECT c.source, c.path, c.start_line, c.end_line, c.scope, c.kind, c.at,"
            " c.salience, f.text FROM chunks AS c JOIN chunks_fts AS f ON f.rowid = c.id"
        ).fetchall()
    db.close()
    return sorted(rows)


def assert_same_as_a_rebuild(ws: Workspace, index: MemoryIndex) -> None:
    rebuilt = open_index(ws, "rebuilt")
    rebuilt.sync_files()
    try:
        assert stored(ws) == stored(ws, "rebuilt")
        for query in QUERIES:
            live = index.search(query, scopes=[""], k=8)
            assert live == rebuilt.search(query, scopes=[""], k=8), query
    finally:
        rebuilt.close()


def words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def item(rng: random.Random, n: int, *, kind: str = "fact") -> MemoryItem:
    at = DAY + timedelta(minutes=n)
    text = f"{words(rng, 4, 12)} number{n}"
    return new_item(
        MemoryLayer.EPISODIC, kind, text, scope=GLOBAL_SCOPE, at=at, confidence=0.6, salience=0.5
    )


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.ensure()
    (ws.memory_root / "items" / "episodic").mkdir(parents=True)
    return ws


@pytest.fixture
def index(ws: Workspace) -> Iterator[MemoryIndex]:
    index = open_index(ws)
    yield index
    index.close()


def test_a_note_appended_turn_after_turn_is_indexed_as_appends_and_as_a_rebuild_would(
    ws: Workspace, index: MemoryIndex
) -> None:
    rng = random.Random(3)
    note = ws.memory_root / NOTE
    grown = 0
    for n in range(200):
        line = f"[{8 + n // 60:02d}:{n % 60:02d}] User: {words(rng, 1, 12)} | Assistant: ok {n}"
        append(note, line + ("\n\n" if n % 17 == 0 else "\n"))  # now and then a blank line
        grown += index.sync_paths([note]).grown == (NOTE,)

    assert grown == 199  # all but the first sync, which found a new file
    assert_same_as_a_rebuild(ws, index)


def test_items_appended_turn_after_turn_are_indexed_as_appends_and_as_a_rebuild_would(
    ws: Workspace, index: MemoryIndex
) -> None:
    rng = random.Random(5)
    path = ws.memory_root / ITEMS
    written: list[MemoryItem] = []
    grown = 0
    for n in range(120):
        made = item(rng, n, kind="turn" if n % 3 == 0 else "fact")  # turns are not indexed
        lines = [encode(made)]
        if n % 10 == 5:
            lines.append("{not an item")  # kept by the store, never indexed
        if n % 20 == 7:  # an item written again under its id: the later line counts
            lines.append(encode(replace(written[-2], text=f"redone {n}")))
        written.append(made)
        append(path, "".join(line + "\n" for line in lines))
        grown += index.sync_paths([path]).grown == (ITEMS,)

    assert grown == 119
    assert [h.text for h in index.search("redone", scopes=[""], k=20)]  # the later line won
    assert_same_as_a_rebuild(ws, index)


def test_a_line_changed_before_the_old_end_makes_the_file_read_whole(
    ws: Workspace, index: MemoryIndex
) -> None:
    note = ws.memory_root / NOTE
    note.write_text("[08:00] User: the garden gate code is 1234 | Assistant: ok\n")
    index.sync_paths([note])
    with note.open("r+b") as handle:  # in place: the same file, larger, its first line changed
        handle.write(b"[08:00] User: the ferry ticket code is")
        handle.seek(0, os.SEEK_END)
        handle.write(b"[09:00] User: the violin lesson is at five | Assistant: ok\n")

    report = index.sync_paths([note])

    assert (report.indexed, report.grown) == ((NOTE,), ())
    assert index.search("garden gate", scopes=[""], k=5) == []
    assert_same_as_a_rebuild(ws, index)


def test_a_note_whose_last_line_was_unfinished_is_read_whole_when_it_grows(
    ws: Workspace, index: MemoryIndex
) -> None:
    note = ws.memory_root / NOTE
    note.write_text("[08:00] User: the garden needs basil")  # no line break yet
    index.sync_paths([note])
    append(note, " and tomato | Assistant: ok\n[08:05] User: ferry ticket | Assistant: ok\n")

    report = index.sync_paths([note])

    assert report.grown == ()
    assert_same_as_a_rebuild(ws, index)


def test_new_bytes_that_are_not_text_make_the_whole_file_judged_again(
    ws: Workspace, index: MemoryIndex
) -> None:
    note = ws.memory_root / NOTE
    note.write_text("[08:00] User: garden tomato | Assistant: ok\n")
    index.sync_paths([note])
    with note.open("ab") as handle:
        handle.write(b"\x00\x01\x02\x03" * 200)  # most of the file is not text now

    report = index.sync_paths([note])

    assert (report.grown, report.skipped) == ((), (NOTE,))
    assert index.search("garden tomato", scopes=[""], k=5) == []
    assert_same_as_a_rebuild(ws, index)


def test_memory_md_that_grew_is_read_whole_as_its_chunks_follow_its_mtime(
    ws: Workspace, index: MemoryIndex
) -> None:
    memory = ws.memory_root / "MEMORY.md"
    memory.write_text("".join(f"- {n}: the walnut velvet fact\n" for n in range(20)))
    index.sync_paths([memory])
    append(memory, "- the copper quarry fact\n")
    os.utime(memory, ns=(0, memory.stat().st_mtime_ns + 5_000_000_000))

    report = index.sync_paths([memory])

    assert (report.indexed, report.grown) == (("MEMORY.md",), ())
    assert_same_as_a_rebuild(ws, index)


def test_an_items_file_rewritten_with_one_item_changed_is_indexed_as_a_rebuild_would(
    ws: Workspace, index: MemoryIndex
) -> None:
    rng = random.Random(9)
    path = ws.memory_root / ITEMS
    items = [item(rng, n) for n in range(30)]
    path.write_text("".join(encode(i) + "\n" for i in items))
    index.sync_paths([path])
    items[4] = replace(items[4], text="the zeppelin is in the hangar")
    items[9] = replace(items[9], status="forgotten")
    path.write_text("".join(encode(i) + "\n" for i in items))  # as the store rewrites a file

    report = index.sync_paths([path])

    assert (report.indexed, report.grown) == ((ITEMS,), ())
    assert [h.path for h in index.search("zeppelin hangar", scopes=[""], k=5)] == [
        f"{ITEMS}#{items[4].id}"
    ]
    assert_same_as_a_rebuild(ws, index)
