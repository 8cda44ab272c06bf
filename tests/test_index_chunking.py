"""Chunking memory files: line numbers, overlap, headings, long lines; a path's scope and time."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime

from bot.index.chunking import Chunk, Chunker
from bot.index.sources import chunk_time, kind_of, scope_of
from bot.memory.scopes import search_scopes
from bot.models import GLOBAL_SCOPE, MemoryScope


def file_lines(text: str, chunk: Chunk) -> str:
    """The file's non-blank lines between the chunk's line numbers."""
    lines = text.split("\n")[chunk.start_line - 1 : chunk.end_line]
    return "\n".join(line for line in lines if line.strip())


def test_chunks_cover_the_file_with_their_line_numbers_and_overlap() -> None:
    text = "\n".join(f"[09:{n % 60:02d}] User: fact {n} " + "word " * 20 for n in range(1, 201))
    chunker = Chunker()
    chunks = chunker.file("2026-11-20.md", text, mtime=0)

    assert len(chunks) > 5
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 200
    for chunk in chunks:
        assert chunk.text == file_lines(text, chunk)
        assert len(chunk.text) <= chunker.max_chars + chunk.text.count("\n")
    for before, after in itertools.pairwise(chunks):
        shared = before.end_line - after.start_line + 1
        assert shared >= 1, "consecutive chunks overlap"
        share = len(file_lines(text, Chunk("", after.start_line, before.end_line, "", "", "", 0)))
        assert 0.05 * chunker.max_chars <= share <= 0.2 * chunker.max_chars


def test_a_heading_starts_a_new_chunk_without_overlap() -> None:
    text = "# Family\nMia plays the violin.\n\n# Work\nSignalling engineer in Leeds.\n"
    chunks = Chunker().file("MEMORY.md", text, mtime=0)

    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (4, 5)]
    assert chunks[1].text == "# Work\nSignalling engineer in Leeds."
    assert {c.kind for c in chunks} == {"memory"}


def test_a_full_chunk_is_cut_at_a_paragraph_break() -> None:
    chunker = Chunker(max_tokens=50)  # 200 characters
    first = "\n".join(["a" * 40] * 3)  # 120 characters: past half a chunk
    second = "\n".join(["b" * 40] * 3)
    chunks = chunker.file("notes.md", f"{first}\n\n{second}\n", mtime=0)

    assert chunks[0].end_line == 3, "cut before the second paragraph, not inside it"
    assert chunks[1].end_line == 7


def test_a_line_longer_than_a_chunk_is_cut_into_overlapping_pieces() -> None:
    chunker = Chunker(max_tokens=25)  # 100 characters
    long_line = "".join(f"{n:04d} " for n in range(100))  # 500 characters
    chunks = chunker.file("MEMORY.md", f"short\n{long_line}\nafter\n", mtime=0)

    pieces = [c.text.split("\n")[0] for c in chunks if c.start_line == 2]
    assert len(pieces) >= 5
    joined = pieces[0]
    for piece in pieces[1:]:
        assert joined.endswith(piece[: chunker.overlap_chars]), "pieces overlap"
        joined += piece[chunker.overlap_chars :]
    assert joined == long_line
    assert all(len(piece) <= chunker.max_chars for piece in pieces)
    assert chunks[-1].text.endswith("after")


def test_chunking_from_where_a_chunk_starts_gives_the_whole_files_chunks_from_there() -> None:
    rng = random.Random(7)
    chunker = Chunker(max_tokens=40)  # 160 characters: many chunks, cuts of every kind
    lines = [_random_line(rng) for _ in range(300)]
    text = "\n".join(lines) + "\n"
    chunks = chunker.file("2026-11-20.md", text, mtime=0)
    resumed = 0

    for first, chunk in enumerate(chunks):
        tail = "\n".join(lines[chunk.start_line - 1 :]) + "\n"
        again = chunker.file_from("2026-11-20.md", tail, line=chunk.start_line, mtime=0)
        if again is not None:
            resumed += 1
            assert again == chunks[first:], chunk.start_line

    assert resumed > len(chunks) * 0.8


def test_a_chunk_that_starts_in_a_line_longer_than_a_chunk_is_not_resumed() -> None:
    chunker = Chunker(max_tokens=25)  # 100 characters
    long_line = "".join(f"{n:04d} " for n in range(100))

    assert chunker.file_from("2026-11-20.md", f"{long_line}\nafter\n", line=9, mtime=0) is None
    assert chunker.file_from("2026-11-20.md", "\nafter\n", line=9, mtime=0) is None  # blank


def _random_line(rng: random.Random) -> str:
    """A note's line of any length, now and then blank, a heading or longer than a chunk."""
    roll = rng.random()
    if roll < 0.1:
        return ""
    if roll < 0.15:
        return "# Section " + str(rng.randint(1, 9))
    if roll < 0.18:
        return "long " * rng.randint(40, 60)
    return f"[09:{rng.randint(0, 59):02d}] " + "word " * rng.randint(1, 25)


def test_blank_lines_are_dropped_and_numbers_kept() -> None:
    chunks = Chunker().file("MEMORY.md", "\n\n\nfirst\n\n\nsecond\n\n", mtime=0)

    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [(4, 7, "first\nsecond")]
    assert Chunker().file("MEMORY.md", "\n \n", mtime=0) == []


def test_a_path_gives_the_chunk_its_scope_and_kind() -> None:
    assert scope_of("MEMORY.md") == ""
    assert scope_of("archive/2026-01-02.md") == ""
    assert scope_of("chats/telegram%3A-100/MEMORY.md") == "telegram:-100"
    assert scope_of("chats/telegram%3A-100%3A7/2026-11-20.md") == "telegram:-100:7"
    assert scope_of("working/telegram%3A42.md") == "telegram:42"
    assert [kind_of(p) for p in ("MEMORY.md", "HISTORY-2026-11.md", "working/x.md")] == [
        "memory",
        "history",
        "working",
    ]
    assert kind_of("chats/telegram%3A-100/2026-11-20.md") == "note"


def test_a_chunk_is_dated_by_its_note_day_or_history_heading() -> None:
    at = datetime(2026, 11, 20, 9, 15, tzinfo=UTC).timestamp()
    assert chunk_time("2026-11-20.md", "[09:15] User: hi | Assistant: hello", 0.0) == at
    heading = "## 2026-11-20T09:15:00+00:00"
    assert chunk_time("HISTORY-2026-11.md", heading, 0.0) == at
    assert chunk_time("MEMORY.md", heading, 123.0) == 123.0
    assert chunk_time("HISTORY.md", "## not a time", 7.0) == 7.0


def test_the_owners_private_chat_searches_global_and_its_own_scope_only() -> None:
    assert search_scopes(GLOBAL_SCOPE, "telegram:1") == ("", "telegram:1")
    group = MemoryScope(chat_key="telegram:-100")
    assert search_scopes(group, "telegram:-100") == ("telegram:-100",)
