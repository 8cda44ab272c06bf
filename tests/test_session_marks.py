"""A session's marks: typed in memory, stored under the keys a session file always had."""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path

from bot.models import SessionMarks
from bot.storage.marks import KEYS, decode_marks, encode_marks
from bot.storage.sessions import SessionStore
from bot.storage.workspace import Workspace

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
OLD_METADATA = {  # as a session file was written before the marks were typed: text only
    "last_inbound_id": "telegram:update:5",
    "memory_scope": "",
    "prompt_system_tokens": "1834",
    "prompt_token_factor": "1.2500",
    "memory_flush_cycle": "2",
    "memory_flush_at": "2026-11-21T09:00:00+00:00",
    "recovered_from": "telegram%3A1.json.corrupt-20261121T090000",
    "archived_part": "true",
    "someone_elses": "kept",
}


def old_session_file(root: Path, metadata: dict[str, str]) -> Path:
    path = root / "sessions" / "telegram%3A1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "version": 1,
        "key": "telegram:1",
        "created_at": NOW.isoformat(),
        "updated_at": NOW.isoformat(),
        "compactions": 2,
        "metadata": metadata,
        "messages": [{"role": "user", "content": "hi"}],
    }
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


def store(root: Path) -> SessionStore:
    workspace = Workspace(root)
    workspace.ensure()
    return SessionStore(workspace, now=lambda: NOW)


async def test_an_old_session_file_reads_into_typed_marks_and_is_written_back_the_same(
    tmp_path: Path,
) -> None:
    path = old_session_file(tmp_path, OLD_METADATA)
    sessions = store(tmp_path)

    session = await sessions.load("telegram:1")

    assert session.marks == SessionMarks(
        last_inbound="telegram:update:5",
        scope="",
        system_tokens=1834,
        token_factor=1.25,
        flushed_cycle=2,
        flushed_at=datetime(2026, 11, 21, 9, 0, tzinfo=UTC),
        recovered_from="telegram%3A1.json.corrupt-20261121T090000",
        archived_part=True,
        unknown=(("someone_elses", "kept"),),
    )
    await sessions.save(session)
    saved = Workspace(tmp_path).session_path("telegram:1")  # the old name renamed at start
    assert not path.exists() and saved.name == "telegram_1.json"
    metadata = json.loads(saved.read_text(encoding="utf-8"))["metadata"]
    assert metadata == OLD_METADATA | {"revision": "1"}  # and the save counted


async def test_a_mark_that_cannot_be_read_is_left_out_and_nothing_else_is_lost(
    tmp_path: Path,
) -> None:
    metadata = {
        "prompt_token_factor": "abc",
        "memory_flush_cycle": "two",
        "memory_flush_at": "yesterday",
        "last_inbound_id": "telegram:update:9",
    }
    old_session_file(tmp_path, metadata)

    session = await store(tmp_path).load("telegram:1")

    assert session.marks == SessionMarks(last_inbound="telegram:update:9")
    assert [m.content for m in session.messages] == ["hi"]


def test_every_mark_has_its_key_and_round_trips() -> None:
    assert set(KEYS) == {f.name for f in fields(SessionMarks)} - {"unknown"}
    marks = SessionMarks(
        last_inbound="i",
        scope="telegram:-100",
        system_tokens=7,
        token_factor=0.5,
        flushed_cycle=0,
        flushed_at=NOW,
        recovered_from="f",
        archived_part=True,
    )
    assert decode_marks(encode_marks(marks)) == marks
    assert encode_marks(SessionMarks()) == {}
