"""Session files: versioned JSON round-trip, key encoding, corrupt files moved aside, archive."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from bot.models import ChatMessage, Session, SessionMarks, ToolCall
from bot.settings import MemorySettings
from bot.storage.files import FileLocks
from bot.storage.sessions import SessionStore, decode_session, encode_session
from bot.storage.workspace import Workspace, decode_key, encode_key, file_key, key_of_file
from tests.fakes.openai_api import FakeOpenAI, Reply, Step
from tests.harness import OWNER, make_settings, started_app
from tests.talk import say

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)


def revised(session: Session, revision: int) -> Session:
    """`session` as its file's `revision`-th save left it (`SessionStore` counts them)."""
    return replace(session, marks=replace(session.marks, revision=revision))


def store(tmp_path: Path) -> SessionStore:
    workspace = Workspace(tmp_path)
    workspace.ensure()
    return SessionStore(workspace, now=lambda: NOW)


def test_keys_round_trip_as_safe_file_names() -> None:
    for key in ("telegram:42", "telegram:-1001234567890", "telegram:-100123:77", "a/b"):
        name = encode_key(key)
        assert ":" not in name and "/" not in name
        assert decode_key(name) == key


async def test_session_round_trips_with_tool_calls(tmp_path: Path) -> None:
    sessions = store(tmp_path)
    session = Session(
        key="telegram:-100123:7",
        messages=(
            ChatMessage(role="user", content="what time?", at=NOW),
            ChatMessage(
                role="assistant",
                content=None,
                tool_calls=(ToolCall(id="c1", name="current_time", arguments="{}"),),
            ),
            ChatMessage(role="tool", content="09:30", tool_call_id="c1", name="current_time"),
            ChatMessage(role="assistant", content="It is 09:30 ☕"),
        ),
        created_at=NOW,
        updated_at=NOW,
        last_prompt_tokens=120,
        compactions=2,
        marks=SessionMarks(last_inbound="telegram:update:5"),
    )
    await sessions.save(session)
    path = tmp_path / "sessions" / f"{file_key(session.key)}.json"
    assert json.loads(path.read_text())["version"] == 1
    assert await sessions.load(session.key) == revised(session, 1)


async def test_missing_session_is_fresh(tmp_path: Path) -> None:
    session = await store(tmp_path).load("telegram:1")
    assert session.messages == () and session.key == "telegram:1"


async def test_corrupt_session_is_moved_aside_and_a_fresh_one_starts(tmp_path: Path) -> None:
    sessions = store(tmp_path)
    path = tmp_path / "sessions" / f"{file_key('telegram:1')}.json"
    path.write_text('{"version": 1, "messages": [')
    session = await sessions.load("telegram:1")
    assert session.messages == ()
    aside = list((tmp_path / "sessions").glob("*.corrupt-*"))
    assert len(aside) == 1
    assert aside[0].read_text() == '{"version": 1, "messages": ['


def test_unknown_version_is_rejected() -> None:
    text = encode_session(Session(key="k", messages=(), created_at=NOW, updated_at=NOW))
    document = json.loads(text)
    document["version"] = 99
    try:
        decode_session(json.dumps(document))
    except ValueError as exc:
        assert "unsupported" in str(exc)
    else:
        raise AssertionError("version 99 was accepted")


async def test_archive_keeps_the_old_file_and_starts_fresh(tmp_path: Path) -> None:
    sessions = store(tmp_path)
    old = Session(
        key="telegram:1",
        messages=(ChatMessage(role="user", content="remember me"),),
        created_at=NOW,
        updated_at=NOW,
    )
    await sessions.save(old)
    fresh = await sessions.archive("telegram:1")
    assert fresh.messages == ()
    assert (await sessions.load("telegram:1")).messages == ()
    archived = list((tmp_path / "sessions" / "archive").iterdir())
    assert len(archived) == 1
    assert "remember me" in archived[0].read_text()


async def test_nothing_set_aside_is_ever_overwritten(tmp_path: Path) -> None:
    sessions = store(tmp_path)  # a clock that stands still: every stamp is the same
    for text in ("first", "second"):
        await sessions.save(
            Session(
                key="telegram:1",
                messages=(ChatMessage(role="user", content=text),),
                created_at=NOW,
                updated_at=NOW,
            )
        )
        await sessions.archive("telegram:1")
    for damage in ("{", "[1]"):
        (tmp_path / "sessions" / f"{file_key('telegram:1')}.json").write_text(damage)
        await sessions.load("telegram:1")
    archived = sorted(p.read_text() for p in (tmp_path / "sessions" / "archive").iterdir())
    assert len(archived) == 2
    assert "first" in archived[0] and "second" in archived[1]
    aside = sorted(p.read_text() for p in (tmp_path / "sessions").glob("*.corrupt-*"))
    assert aside == ["[1]", "{"]


async def test_a_part_cut_from_a_session_is_archived_under_its_key(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    sessions = SessionStore(workspace, now=lambda: datetime(2026, 11, 24, 9, 0, tzinfo=UTC))
    session = sessions.fresh("telegram:1")
    part = (ChatMessage(role="user", content="the cut part"),)
    path = await sessions.archive_part(session, part)
    other = await sessions.archive_part(sessions.fresh("telegram:12"), part)
    assert path is not None and other is not None
    assert workspace.archived_session_paths("telegram:1") == [path]
    saved, _ = decode_session(path.read_text())
    assert saved.key == "telegram:1" and saved.messages == part
    assert await sessions.archive_part(session, ()) is None


def test_a_session_file_holds_a_message_a_line() -> None:
    said = ChatMessage(role="user", content='two\nlines and "quotes"', at=NOW)
    answer = ChatMessage(role="assistant", content="ok")
    for messages in ((), (said,), (said, answer)):
        session = Session(key="k", messages=messages, created_at=NOW, updated_at=NOW)
        text = encode_session(session)
        decoded, dropped = decode_session(text)
        assert decoded == session and dropped == ()
        lines = text.splitlines()
        opened = next(i for i, line in enumerate(lines) if line.startswith(' "messages": ['))
        assert len(lines) - opened - 1 == (len(messages) + 2 if messages else 1)  # " ]", "}"


async def test_a_session_changed_on_disk_is_read_again(tmp_path: Path) -> None:
    sessions = store(tmp_path)
    said = ChatMessage(role="user", content="my code is 4721", at=NOW)
    session = Session(key="telegram:1", messages=(said,), created_at=NOW, updated_at=NOW)
    await sessions.save(session)
    assert await sessions.load("telegram:1") == revised(session, 1)  # kept from the save
    path = tmp_path / "sessions" / f"{file_key(session.key)}.json"

    rewritten = replace(session, messages=(replace(said, content="my code was forgotten"),))
    path.write_text(encode_session(rewritten))  # another writer: a forget, by hand
    assert (await sessions.load("telegram:1")).messages == rewritten.messages
    path.unlink()
    assert (await sessions.load("telegram:1")).messages == ()


async def test_an_empty_answer_is_saved_as_one_and_read_back_without_repair(
    tmp_path: Path,
) -> None:
    sessions = store(tmp_path)
    session = replace(
        sessions.fresh("telegram:42"),
        messages=(
            ChatMessage(role="user", content="hi", at=NOW),
            ChatMessage(role="assistant", content=None, at=NOW),  # the model said nothing
        ),
    )
    await sessions.save(session)

    with capture_logs() as logs:
        loaded = await store(tmp_path).load("telegram:42")  # a restart reads the file

    assert [e["event"] for e in logs if e["event"] == "session_repaired"] == []
    assert [(m.role, m.content) for m in loaded.messages] == [("user", "hi"), ("assistant", "")]


def test_session_file_names_are_readable_and_round_trip() -> None:
    expected = {
        "telegram:42": "telegram_42",
        "telegram:-1001234567890": "telegram_-1001234567890",  # a group
        "telegram:-100123:77": "telegram_-100123_77",  # a forum topic
        "console:0": "console_0",
        "odd_key:a/b%c": "odd%5Fkey_a%2Fb%25c",
    }
    for key, name in expected.items():
        assert file_key(key) == name
        assert key_of_file(name) == key
        assert key_of_file(encode_key(key)) == key  # an older name is still read


async def test_old_session_file_names_are_renamed_at_start_and_still_read(
    tmp_path: Path,
) -> None:
    session = Session(
        key="telegram:-100123:7",
        messages=(ChatMessage(role="user", content="topic seven", at=NOW),),
        created_at=NOW,
        updated_at=NOW,
    )
    old = tmp_path / "sessions" / "telegram%3A-100123%3A7.json"
    old_archive = tmp_path / "sessions" / "archive" / "telegram%3A-100123%3A7-20261120T0900.json"
    old_archive.parent.mkdir(parents=True)
    old.write_text(encode_session(session))
    old_archive.write_text(encode_session(session))

    sessions = store(tmp_path)  # Workspace.ensure(), as at every start
    loaded = await sessions.load("telegram:-100123:7")

    assert sorted(p.name for p in (tmp_path / "sessions").glob("*.json")) == [
        "telegram_-100123_7.json"
    ]
    assert [p.name for p in Workspace(tmp_path).archived_session_paths(session.key)] == [
        "telegram_-100123_7-20261120T0900.json"
    ]
    assert sessions.keys() == ["telegram:-100123:7"]
    assert [m.content for m in loaded.messages] == ["topic seven"]


# ----------------------------------------------------------- another writer, and the end


async def test_a_forget_by_another_process_during_a_turn_is_kept_with_the_turn(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    """Another process (the CLI, the memory page) rewrites the conversation while a turn is
    under way: the turn's save puts its messages after that version instead of over it."""
    settings = make_settings(workspace, telegram=None, openai=fake_openai)
    path = Workspace(workspace).session_path(f"telegram:{OWNER}")

    def meanwhile(request: dict[str, Any]) -> Step:
        document = json.loads(path.read_text())
        document["messages"][0]["content"] = "[forgotten]"  # as another process would
        path.write_text(json.dumps(document))
        return Reply("second answer")

    async with started_app(settings) as app:
        fake_openai.script(Reply("first answer"))
        await say(app, "my secret is 1234")
        fake_openai.answer_all(meanwhile)
        assert await say(app, "and now?") == ["second answer"]

    saved = json.loads(path.read_text())
    contents = [m["content"] for m in saved["messages"]]
    assert contents == ["[forgotten]", "first answer", "and now?", "second answer"]
    assert saved["metadata"]["revision"] == "2"  # one save a turn, the second over theirs


async def test_a_save_waits_for_another_process_holding_the_sessions_lock(
    tmp_path: Path,
) -> None:
    workspace = Workspace(tmp_path)
    ours = SessionStore(workspace, now=lambda: NOW, locks=FileLocks(tmp_path / "locks"))
    other = FileLocks(tmp_path / "locks")  # another process's: its byte of the same lock file
    session = replace(ours.fresh("telegram:1"), messages=(ChatMessage("user", "hi"),))

    async with other.hold(workspace.session_path("telegram:1")):
        saving = asyncio.create_task(ours.save(session))
        await asyncio.sleep(0.2)
        assert not saving.done() and not workspace.session_path("telegram:1").exists()
    await asyncio.wait_for(saving, timeout=5)
    assert workspace.session_path("telegram:1").exists()


async def test_an_archived_conversation_is_marked_ended_with_why(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        workspace, telegram=None, openai=fake_openai, memory=MemorySettings(memory_window=0)
    )
    async with started_app(settings) as app:
        fake_openai.script(Reply("hello"))
        await say(app, "hi")
        await say(app, "/new")

    [archived] = (workspace / "sessions" / "archive").glob("*.json")
    metadata = json.loads(archived.read_text())["metadata"]
    assert (metadata["state"], metadata["ended"]) == ("ended", "/new")
    current = json.loads(Workspace(workspace).session_path(f"telegram:{OWNER}").read_text())
    assert "state" not in current["metadata"] and current["messages"] == []
