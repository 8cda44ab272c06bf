"""The stores over both kinds of workspace documents (`tests.shared_documents`): the files on
this disk, and a replica's (`SplitDocuments`: the table every replica shares, the rest on its
disk; skipped without `MNEMO_TEST_PG`). Two workspaces on one set
of documents stand for two replicas: what one writes, the other reads, and no cache of either
serves a text the other has changed since."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from bot.index import MemoryIndex
from bot.index.sync.transcripts import TranscriptSource
from bot.memory.forgetting import Forgetting
from bot.memory.notes import quoted
from bot.memory.notes.daily import DailyNotes, NoteFormat
from bot.memory.notes.history import HistoryLog
from bot.memory.notes.long_term import LongTermMemory
from bot.memory.notes.working import WorkingMemory
from bot.models import GLOBAL_SCOPE, ChatMessage, MemoryScope, Provenance, Session
from bot.storage.files import Documents, FileLocks
from bot.storage.lines import LineReader
from bot.storage.sessions import SessionStore
from bot.storage.undo import UndoStore
from bot.storage.workspace import Workspace
from tests.shared_documents import WORKSPACES, two_documents

NOW = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)
CHAT = MemoryScope(chat_key="telegram:-100123")


@pytest.fixture(params=WORKSPACES)
async def two(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[Documents]]:
    async with two_documents(request.param, tmp_path) as held:
        yield held


def replicas(two: list[Documents], root: Path) -> list[Workspace]:
    return [Workspace(root, documents) for documents in two]


def said(session: Session, text: str) -> Session:
    """`session` with an exchange more: `text` and its answer."""
    asked = ChatMessage(role="user", content=text, at=NOW)
    answered = ChatMessage(role="assistant", content=text.upper(), at=NOW)
    return replace(session, messages=(*session.messages, asked, answered))


async def test_a_session_saved_by_one_replica_is_loaded_by_the_other(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = (SessionStore(w, now=lambda: NOW) for w in replicas(two, tmp_path))
    await first.save(said(first.fresh("telegram:7"), "one"))
    assert [m.content for m in (await second.load("telegram:7")).messages] == ["one", "ONE"]
    await first.save(said(await first.load("telegram:7"), "two"))
    loaded = await second.load("telegram:7")  # its kept copy is of an older version
    assert [m.content for m in loaded.messages] == ["one", "ONE", "two", "TWO"]
    assert second.keys() == ["telegram:7"]


async def test_a_session_archived_and_its_parts_are_kept_apart(
    two: list[Documents], tmp_path: Path
) -> None:
    workspace = replicas(two, tmp_path)[0]
    sessions = SessionStore(workspace, now=lambda: NOW)
    session = said(sessions.fresh("telegram:7"), "old")
    await sessions.save(session)
    part = await sessions.archive_part(session, session.messages)
    again = await sessions.archive_part(session, session.messages)
    await sessions.archive("telegram:7")
    archived = workspace.archived_session_paths("telegram:7")
    assert part in archived and again in archived and len(set(archived)) == 3
    assert (await sessions.load("telegram:7")).messages == ()


async def test_a_session_that_does_not_parse_is_set_aside_not_lost(
    two: list[Documents], tmp_path: Path
) -> None:
    workspace = replicas(two, tmp_path)[0]
    path = workspace.session_path("telegram:7")
    workspace.documents.write(path, b"{not json")
    session = await SessionStore(workspace, now=lambda: NOW).load("telegram:7")
    assert session.marks.recovered_from is not None
    aside = path.with_name(session.marks.recovered_from)
    assert workspace.documents.read(aside) == b"{not json"


async def test_facts_one_replica_appends_are_in_the_other_s_prompt(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = replicas(two, tmp_path)
    reader = LineReader(memory_root=second.memory_root, documents=second.documents)
    memory = LongTermMemory(first, FileLocks(tmp_path / "locks"))
    await memory.append_facts(CHAT, ["Likes tea"], section="Facts")
    lines = reader.head(second.long_term_path(CHAT))
    assert lines is not None and lines.lines == ("## Facts", "- Likes tea")
    await memory.append_facts(CHAT, ["Lives in Oslo"])
    lines = reader.head(second.long_term_path(CHAT))
    assert lines is not None and lines.lines[-1] == "- Lives in Oslo"


async def test_a_rewrite_over_another_replica_s_change_is_refused(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = replicas(two, tmp_path)
    mine = LongTermMemory(first, FileLocks(tmp_path / "locks"))
    theirs = LongTermMemory(second, FileLocks(tmp_path / "locks"))
    await mine.append_facts(GLOBAL_SCOPE, ["Likes tea"])
    seen = mine.snapshot(GLOBAL_SCOPE)
    await theirs.append_facts(GLOBAL_SCOPE, ["Has a cat"])
    assert not await mine.replace_if_unchanged(GLOBAL_SCOPE, seen.digest, "- Likes coffee\n")
    assert "Has a cat" in theirs.snapshot(GLOBAL_SCOPE).text


async def test_a_crlf_memory_keeps_its_line_endings(two: list[Documents], tmp_path: Path) -> None:
    workspace = replicas(two, tmp_path)[0]
    path = workspace.long_term_path(GLOBAL_SCOPE)
    workspace.documents.write(path, b"# Memory\r\n- Likes tea\r\n")
    memory = LongTermMemory(workspace, FileLocks(tmp_path / "locks"))
    edit = await memory.replace_line(GLOBAL_SCOPE, "tea", "Likes green tea")
    assert edit.after == "- Likes green tea"
    assert workspace.documents.read(path) == b"# Memory\r\n- Likes green tea\r\n"


async def test_a_daily_note_line_is_written_once_across_replicas(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = (DailyNotes(w, NoteFormat(200, 200)) for w in replicas(two, tmp_path))
    assert await first.append_once(CHAT, NOW, "hi", "hello", since=date(2026, 11, 26))
    assert not await second.append_once(CHAT, NOW, "hi", "hello", since=date(2026, 11, 26))
    await second.append(CHAT, NOW, "and", "more")
    workspace = replicas(two, tmp_path)[0]
    assert workspace.daily_note_paths(CHAT) == [workspace.daily_note_path(CHAT, NOW.date())]
    note = workspace.documents.read(workspace.daily_note_path(CHAT, NOW.date()))
    assert note == b"[09:30] User: hi | Assistant: hello\n[09:30] User: and | Assistant: more\n"


async def test_forget_reaches_every_shared_document_and_undo_puts_them_back(
    two: list[Documents], tmp_path: Path
) -> None:
    workspace = replicas(two, tmp_path)[0]
    documents, chat = workspace.documents, CHAT.chat_key or ""
    sessions = SessionStore(workspace, now=lambda: NOW)
    await sessions.save(said(sessions.fresh(chat), "my pin is 4321"))
    memory, note = workspace.long_term_path(CHAT), workspace.daily_note_path(CHAT, NOW.date())
    documents.write(memory, b"- Likes tea\n- Pin 4321\n")
    documents.write(note, b"[09:30] User: my pin is 4321 | Assistant: ok\n[09:31] User: hi\n")
    items = workspace.items_dir(CHAT) / "semantic.jsonl"
    documents.write(items, b'{"id": "s-1", "text": "Pin 4321"}\n')
    undo = UndoStore(tmp_path / "undo", keep=timedelta(minutes=5), now=lambda: NOW)
    forgetting = Forgetting(workspace, FileLocks(tmp_path / "locks"), undo)
    forgotten = await forgetting.forget(CHAT, chat, "4321")
    assert forgotten.total == 5  # three lines, two messages (the user's and the answer's)
    assert documents.read(items) == b""
    for path in (memory, note, workspace.session_path(chat)):
        assert b"4321" not in (documents.read(path) or b"")
    undone = await forgetting.restore(chat)
    assert undone is not None and undone.restored == 4
    assert documents.read(memory) == b"- Likes tea\n- Pin 4321\n"


async def test_history_entries_are_written_once_and_read_by_the_other_replica(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = (HistoryLog(w, FileLocks(tmp_path / "locks")) for w in replicas(two, tmp_path))
    await first.append(CHAT, "We planned a trip.", NOW, key="consolidation 1a.0")
    await second.append(CHAT, "We planned a trip.", NOW, key="consolidation 1a.0")
    await second.append(CHAT, "[checkpoint] compacted", NOW + timedelta(hours=1))
    assert await second.entry(CHAT, "consolidation 1a.0") == "We planned a trip."
    assert first.last_consolidation(CHAT) == NOW
    assert first.last_compaction(CHAT) == NOW + timedelta(hours=1)
    workspace = replicas(two, tmp_path)[0]
    text = workspace.documents.read(workspace.history_path(CHAT)) or b""
    assert text.count(b"We planned a trip.") == 1


async def test_a_fact_s_origin_and_a_quote_live_beside_the_shared_memory(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = replicas(two, tmp_path)
    origin = Provenance(by="Ann (42)", chat="telegram:42", at=NOW, via="voice")
    memory = LongTermMemory(first, FileLocks(tmp_path / "locks"))
    await memory.append_facts(GLOBAL_SCOPE, ["Likes tea"], origin=origin)
    theirs = LongTermMemory(second, FileLocks(tmp_path / "locks"))
    assert theirs.origins(GLOBAL_SCOPE).of("Likes tea") == origin
    path = first.long_term_path(GLOBAL_SCOPE)
    [made] = quoted.add(path, ["The manual says: press twice."], origin, first.documents)
    assert [q.text for q in quoted.pending(path, second.documents)] == [made.text]
    taken = quoted.take(path, made.id, second.documents)
    assert taken is not None and taken.id == made.id
    assert quoted.pending(path, first.documents) == []


async def test_each_replica_s_index_is_made_from_the_shared_documents(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = replicas(two, tmp_path)
    sessions = SessionStore(first, now=lambda: NOW)
    await sessions.save(said(sessions.fresh("telegram:7"), "the kayak is red"))
    memory = LongTermMemory(first, FileLocks(tmp_path / "locks"))
    await memory.append_facts(GLOBAL_SCOPE, ["The boat is moored at pier seven"])
    index = MemoryIndex(
        second.memory_root,
        tmp_path / "index-of-the-second",
        readers=(TranscriptSource(second.sessions_dir),),
        documents=second.documents,
    )
    try:
        index.sync_files()
        [hit] = index.search("boat pier", scopes=[""], k=1, now=NOW)
        assert hit.path == "MEMORY.md" and hit.at.year >= 2026
        said_hits = index.search("kayak", scopes=["telegram:7"], k=1, now=NOW)
        assert [h.path.split("#")[0] for h in said_hits] == ["sessions/telegram%3A7"]
        await memory.append_facts(GLOBAL_SCOPE, ["The canoe is green"])
        assert index.sync_paths([second.long_term_path(GLOBAL_SCOPE)]).indexed == ("MEMORY.md",)
        assert index.search("canoe", scopes=[""], k=1, now=NOW)
    finally:
        index.close()


async def test_working_memory_is_read_by_the_other_replica_with_its_age(
    two: list[Documents], tmp_path: Path
) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    first, second = (
        WorkingMemory(w, FileLocks(tmp_path / "locks"), stale_days=2, now=lambda: later)
        for w in replicas(two, tmp_path)
    )
    await first.write("telegram:7", "planning the Lisbon trip")
    note = second.read_fresh("telegram:7")
    assert note is not None and note.text == "planning the Lisbon trip"
    assert timedelta(minutes=50) < later - note.updated_at < timedelta(minutes=70)
    await second.clear("telegram:7")
    assert first.read_fresh("telegram:7") is None
