"""The documents' contract (`bot.storage.files.Documents`), for both: the files on this disk
(`FileDocuments`) and the table every replica shares (`PgDocuments`; skipped without
`MNEMO_TEST_PG`). Two holders stand for two processes on one workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.storage.files import Documents
from tests.shared_documents import two

__all__ = ["two"]  # the fixture, used by name


def test_a_missing_document_has_no_version_and_no_bytes(
    two: list[Documents], tmp_path: Path
) -> None:
    documents = two[0]
    path = tmp_path / "memory" / "MEMORY.md"
    assert documents.version(path) is None
    assert documents.read(path) is None
    assert documents.listing(tmp_path / "memory", "*.md") == []
    with pytest.raises(FileNotFoundError):
        documents.open(path)


def test_bytes_come_back_as_written(two: list[Documents], tmp_path: Path) -> None:
    first, second = two
    path = tmp_path / "memory" / "MEMORY.md"
    data = "\ufeff# Memory\r\n- café\r\n".encode() + b"\xe9 latin-1\n"
    first.write(path, data)
    assert second.read(path) == data
    with second.open(path) as handle:
        handle.seek(3)
        assert handle.read(8) == b"# Memory"


def test_every_change_is_a_new_version_the_other_holder_sees(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = two
    path = tmp_path / "sessions" / "telegram_1.json"
    first.write(path, b"aaaa")
    seen = {second.version(path)}
    first.write(path, b"bbbb")  # the same size
    seen.add(second.version(path))
    first.append(path, b"c")
    seen.add(second.version(path))
    assert None not in seen
    assert len(seen) == 3
    assert first.version(path) == second.version(path)


def test_an_append_adds_at_the_end_and_makes_a_missing_document(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = two
    path = tmp_path / "memory" / "2026-11-27.md"
    first.append(path, b"[09:00] one\n")
    second.append(path, b"[09:01] two\n", durable=False)
    assert first.read(path) == b"[09:00] one\n[09:01] two\n"


def test_a_write_over_a_changed_version_is_refused(two: list[Documents], tmp_path: Path) -> None:
    mine, theirs = two
    path = tmp_path / "memory" / "MEMORY.md"
    assert mine.write_if(path, b"- first\n", None)
    assert not theirs.write_if(path, b"- made twice\n", None)
    read = mine.version(path)
    theirs.write(path, b"- a person's edit\n")
    assert not mine.write_if(path, b"- the bot's rewrite\n", read)
    assert mine.read(path) == b"- a person's edit\n"
    assert mine.write_if(path, b"- the bot's rewrite\n", mine.version(path))
    assert theirs.read(path) == b"- the bot's rewrite\n"


def test_a_listing_holds_a_folder_s_own_matching_documents_sorted(
    two: list[Documents], tmp_path: Path
) -> None:
    documents = two[0]
    memory = tmp_path / "memory"
    for name in ("2026-11-27.md", "2026-11-26.md", "MEMORY.md", "notes.txt"):
        documents.write(memory / name, b"x\n")
    documents.write(memory / "chats" / "a" / "2026-11-25.md", b"x\n")
    documents.write(tmp_path / "memory2" / "2026-11-24.md", b"x\n")
    found = documents.listing(memory, "????-??-??.md")
    assert found == [memory / "2026-11-26.md", memory / "2026-11-27.md"]
    assert documents.listing(memory / "chats" / "a", "*.md") == [
        memory / "chats" / "a" / "2026-11-25.md"
    ]


def test_a_listing_pattern_with_folders_matches_that_deep_only(
    two: list[Documents], tmp_path: Path
) -> None:
    documents = two[0]
    chats = tmp_path / "memory" / "chats"
    for path in ("b/reminders.jsonl", "a/reminders.jsonl", "a/files/reminders.jsonl"):
        documents.write(chats / path, b"x\n")
    documents.write(chats / "reminders.jsonl", b"x\n")
    assert documents.listing(chats, "*/reminders.jsonl") == [
        chats / "a" / "reminders.jsonl",
        chats / "b" / "reminders.jsonl",
    ]


def test_a_walk_holds_every_document_below_a_folder(two: list[Documents], tmp_path: Path) -> None:
    documents = two[0]
    memory = tmp_path / "memory"
    for path in ("MEMORY.md", "chats/a/MEMORY.md", "items/episodic/2026-11-27.jsonl"):
        documents.write(memory / path, b"x\n")
    documents.write(tmp_path / "memory2" / "MEMORY.md", b"x\n")
    assert documents.walk(memory) == [
        memory / "MEMORY.md",
        memory / "chats" / "a" / "MEMORY.md",
        memory / "items" / "episodic" / "2026-11-27.jsonl",
    ]
    assert documents.walk(tmp_path / "sessions") == []


def test_names_with_glob_and_like_characters_are_listed_as_they_are(
    two: list[Documents], tmp_path: Path
) -> None:
    documents = two[0]
    sessions = tmp_path / "sessions"
    documents.write(sessions / "telegram_-100%5F1_7.json", b"{}")
    documents.write(tmp_path / "sessionsX" / "other.json", b"{}")
    assert documents.listing(sessions, "*.json") == [sessions / "telegram_-100%5F1_7.json"]
    assert documents.listing(sessions, "telegram_-100%5F1_7-*.json") == []


def test_a_path_is_the_same_document_however_it_is_spelled(
    two: list[Documents], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    documents = two[0]
    (tmp_path / "memory").mkdir()
    documents.write(tmp_path / "memory" / "MEMORY.md", b"- x\n")
    assert documents.read((tmp_path / "memory" / "MEMORY.md").resolve()) == b"- x\n"
    monkeypatch.chdir(tmp_path)
    assert documents.read(Path("memory") / "MEMORY.md") == b"- x\n"


def test_a_move_gives_the_document_its_new_path(two: list[Documents], tmp_path: Path) -> None:
    first, second = two
    source = tmp_path / "sessions" / "telegram_1.json"
    target = tmp_path / "sessions" / "archive" / "telegram_1-20261127.json"
    first.write(source, b"{}\n")
    first.move(source, target)
    assert second.read(source) is None
    assert second.read(target) == b"{}\n"
    with pytest.raises(FileNotFoundError):
        first.move(source, target.with_name("again.json"))


def test_a_delete_removes_the_document_once(two: list[Documents], tmp_path: Path) -> None:
    first, second = two
    path = tmp_path / "state" / "undo" / "1.json"
    first.write(path, b"{}")
    second.delete(path)
    second.delete(path)
    assert first.version(path) is None
