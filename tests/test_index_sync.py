"""Files → index: delta sync after hand edits, deletions, binary files, rebuilds; the sync of
given paths (what a turn wrote) finds files as the walk does."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.errors import LLMUnavailable
from bot.index import MemoryIndex
from bot.index.memory_index import INDEX_FILE
from bot.storage.workspace import Workspace
from tests.fakes.embedder import FakeEmbedder

NOTES = {
    "MEMORY.md": "# Pets\nThe cat is called Pixel.\n\n# Food\nAllergic to peanuts.\n",
    "2026-11-19.md": "[08:00] User: plan the garden | Assistant: Tulips in March.\n",
    "2026-11-20.md": "[09:15] User: buy oat milk | Assistant: Noted, oat milk.\n",
    "chats/telegram%3A-100/MEMORY.md": "The group meets on Fridays for pizza.\n",
}


def found(index: MemoryIndex, query: str) -> list[str]:
    return [hit.citation for hit in index.search(query, scopes=["", "telegram:-100"], k=10)]


def bump(path: Path) -> None:
    """Move the mtime on, as a later edit would (file systems may keep a coarse clock)."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 2_000_000_000))


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    for name, text in NOTES.items():
        (ws.memory_root / name).parent.mkdir(parents=True, exist_ok=True)
        (ws.memory_root / name).write_text(text, encoding="utf-8")
    return ws


@pytest.fixture
def index(ws: Workspace) -> Iterator[MemoryIndex]:
    index = MemoryIndex(ws.memory_root, ws.index_dir)
    report = index.sync_files()
    assert sorted(report.indexed) == sorted(NOTES)
    yield index
    index.close()


def test_a_hand_edit_is_reindexed_and_untouched_files_are_not(
    ws: Workspace, index: MemoryIndex
) -> None:
    path = ws.memory_root / "MEMORY.md"
    path.write_text("# Pets\nThe cat is called Pixel.\nThe dog is called Biscuit.\n")
    bump(path)

    report = index.sync_files()

    assert report.indexed == ("MEMORY.md",)
    assert report.unchanged == len(NOTES) - 1
    assert found(index, "Biscuit") == ["MEMORY.md#L1-L3"]
    assert found(index, "peanuts") == [], "the edited-away line is gone"
    assert index.sync_files().indexed == (), "nothing changed since"


def test_a_touched_but_identical_file_is_not_rechunked(ws: Workspace, index: MemoryIndex) -> None:
    bump(ws.memory_root / "2026-11-20.md")

    report = index.sync_files()

    assert (report.indexed, report.touched) == ((), 1)
    assert index.sync_files().unchanged == len(NOTES)


def test_a_deleted_file_loses_its_chunks(ws: Workspace, index: MemoryIndex) -> None:
    (ws.memory_root / "2026-11-19.md").unlink()

    report = index.sync_files()

    assert report.removed == ("2026-11-19.md",)
    assert found(index, "tulips") == []
    assert index.stats().files == len(NOTES) - 1


def test_a_file_that_is_not_text_is_skipped(ws: Workspace, index: MemoryIndex) -> None:
    (ws.memory_root / "2026-11-21.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00 oat milk")

    report = index.sync_files()

    assert (report.skipped, report.indexed) == (("2026-11-21.md",), ())
    assert found(index, "oat milk") == ["2026-11-20.md#L1-L1"]
    assert index.sync_files().skipped == (), "remembered by its hash, not read again"


def test_hidden_and_non_markdown_files_are_not_sources(ws: Workspace, index: MemoryIndex) -> None:
    (ws.memory_root / ".MEMORY.md.x1.tmp").write_text("half-written zeppelin")
    (ws.memory_root / "items").mkdir()
    (ws.memory_root / "items" / "semantic.jsonl").write_text('{"text": "zeppelin"}\n')

    assert index.sync_files().indexed == ()
    assert found(index, "zeppelin") == []


def test_deleting_the_index_rebuilds_the_same_results(ws: Workspace, index: MemoryIndex) -> None:
    queries = ["cat", "oat milk", "garden tulips", "pizza", "peanuts allergy"]
    before = {q: index.search(q, scopes=["", "telegram:-100"], k=5) for q in queries}
    index.close()
    shutil.rmtree(ws.index_dir)

    again = MemoryIndex(ws.memory_root, ws.index_dir)
    again.sync_files()
    after = {q: again.search(q, scopes=["", "telegram:-100"], k=5) for q in queries}
    rebuilt = again.rebuild()
    twice = {q: again.search(q, scopes=["", "telegram:-100"], k=5) for q in queries}
    again.close()

    assert all(before[q] for q in queries)
    assert after == before
    assert sorted(rebuilt.indexed) == sorted(NOTES)
    assert twice == before


def test_an_index_of_another_schema_version_is_rebuilt(ws: Workspace, index: MemoryIndex) -> None:
    index.close()
    with sqlite3.connect(ws.index_dir / INDEX_FILE) as db:
        db.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    db.close()

    again = MemoryIndex(ws.memory_root, ws.index_dir)
    assert again.stats().files == 0, "dropped"
    assert sorted(again.sync_files().indexed) == sorted(NOTES)
    again.close()


def test_the_index_file_is_private(ws: Workspace, index: MemoryIndex) -> None:
    assert stat.S_IMODE((ws.index_dir / INDEX_FILE).stat().st_mode) == 0o600


def test_writes_by_another_process_are_followed(ws: Workspace, index: MemoryIndex) -> None:
    """The CLI's `memory reindex` runs beside the bot: another connection to the same file."""
    cli = MemoryIndex(ws.memory_root, ws.index_dir)
    cli.rebuild()
    cli.add_document("s-1", "The boat is moored at pier nine.", "")
    cli.close()

    index.add_document("s-2", "The kayak is in the shed.", "")  # no id clash after the rebuild

    assert found(index, "boat") == ["items/s-1#L1-L1"]
    assert found(index, "kayak") == ["items/s-2#L1-L1"]
    assert found(index, "pixel") == ["MEMORY.md#L1-L2"]


def test_a_damaged_index_file_is_replaced(ws: Workspace, index: MemoryIndex) -> None:
    index.close()
    (ws.index_dir / INDEX_FILE).write_bytes(b"this is not a database" * 100)

    again = MemoryIndex(ws.memory_root, ws.index_dir)

    assert sorted(again.sync_files().indexed) == sorted(NOTES)
    assert found(again, "pixel") == ["MEMORY.md#L1-L2"]
    again.close()


# ----------------------------------------------------------------------------- given paths


def test_syncing_given_paths_reads_those_files_and_no_other(
    ws: Workspace, index: MemoryIndex
) -> None:
    note, memory = ws.memory_root / "2026-11-20.md", ws.memory_root / "MEMORY.md"
    with note.open("a") as handle:
        handle.write("[10:00] User: the ferry leaves at noon | Assistant: Noted.\n")
    memory.write_text("# Pets\nThe dog is called Biscuit.\n")
    bump(memory)

    report = index.sync_paths([note])

    assert (report.indexed, report.unchanged) == (("2026-11-20.md",), 0)
    assert found(index, "ferry noon") == ["2026-11-20.md#L1-L2"]
    assert found(index, "Biscuit") == [], "a file not given waits for the walk"
    assert index.sync_files().indexed == ("MEMORY.md",)
    assert found(index, "Biscuit") == ["MEMORY.md#L1-L2"]


def test_a_given_path_gone_from_disk_gives_up_its_sources(
    ws: Workspace, index: MemoryIndex
) -> None:
    (ws.memory_root / "2026-11-19.md").unlink()

    report = index.sync_paths([ws.memory_root / "2026-11-19.md", ws.memory_root / "MEMORY.md"])

    assert (report.removed, report.unchanged) == (("2026-11-19.md",), 1)
    assert found(index, "tulips") == []


def test_given_paths_are_sources_only_where_the_walk_finds_them(
    ws: Workspace, index: MemoryIndex, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "2026-01-01.md").write_text("the zeppelin hangar\n")
    (ws.memory_root / "linked").symlink_to(outside)  # the walk never enters a linked folder
    (ws.memory_root / ".draft.md").write_text("the zeppelin draft\n")
    (ws.memory_root / "todo.txt").write_text("the zeppelin list\n")
    paths = [
        ws.memory_root / "linked" / "2026-01-01.md",
        ws.memory_root / ".draft.md",
        ws.memory_root / "todo.txt",
        outside / "2026-01-01.md",
        ws.memory_root,
    ]

    given = index.sync_paths(paths)
    walked = index.sync_files()

    assert (given.indexed, given.removed, walked.indexed) == ((), (), ())
    assert found(index, "zeppelin") == []


def test_a_sync_whose_write_failed_reads_the_file_again_next_time(ws: Workspace) -> None:
    embedder = FakeEmbedder()
    index = MemoryIndex(ws.memory_root, ws.index_dir, embedder=embedder)
    index.sync_files()
    note = ws.memory_root / "2026-11-20.md"
    with note.open("a") as handle:
        handle.write("[10:00] User: the ferry leaves at noon | Assistant: Noted.\n")
    embedder.fail_next = True

    with pytest.raises(LLMUnavailable):
        index.sync_paths([note])
    report = index.sync_paths([note])
    index.close()

    assert report.indexed == ("2026-11-20.md",), "not recorded as read when the write failed"
