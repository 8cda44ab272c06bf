"""Forgetting that forgets: after /forget nothing the bot keeps or shows holds the text — not
the next prompt, not memory_search, not any file under memory/ or sessions/ (nor the index) —
and /undo puts it all back within its window; after that the text is gone from disk."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app import App
from bot.memory.forgetting import MARKER, Forgetting
from bot.models import GLOBAL_SCOPE
from bot.settings import MemorySettings
from bot.storage.files import FileLocks
from bot.storage.undo import UndoStore
from bot.storage.workspace import Workspace
from tests.clock import Clock
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls
from tests.harness import make_settings, started_app
from tests.talk import say, tool_result

SAID = "My spare key is under the blue pot."
FACT = "The spare key is under the blue pot."
NEEDLE = b"spare key"
NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


def holding(folder: Path, needle: bytes = NEEDLE) -> list[str]:
    """Every file under `folder` whose bytes hold `needle` (case-insensitive)."""
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and needle in p.read_bytes().lower()
    )


def consolidated(entry: str, memory: str) -> Reply:
    return Reply(json.dumps({"history_entry": entry, "memory_update": memory}))


@pytest.fixture
async def told(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    """The key told, remembered by a tag, consolidated by /new into HISTORY and MEMORY.md (and
    the archive), and mentioned again in the current conversation."""
    settings = make_settings(workspace, telegram=None, openai=fake_openai)
    async with started_app(settings) as app:
        fake_openai.script(
            Reply(f"Noted. <memory>{FACT}</memory>"),
            consolidated(
                "[2026-11-24 09:00] The user said where the spare key is.",
                f"## Remembered\n- {FACT}\n- Spare key: blue pot by the door\n",
            ),
            Reply("Yes: under the blue pot."),
        )
        await say(app, SAID)
        await say(app, "/new")
        await say(app, "Remind me, the spare key is where?")
        yield app


async def test_forget_leaves_no_trace_and_undo_puts_it_all_back(
    told: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    assert holding(workspace / "memory") and holding(workspace / "sessions")
    before = {p: p.read_bytes() for p in (workspace / "memory").rglob("*.md")}

    [receipt] = await say(told, "/forget spare key")

    assert receipt.startswith("Forgot ") and "this conversation" in receipt
    assert holding(workspace / "memory") == []
    assert holding(workspace / "sessions") == []
    assert holding(workspace / "index") == []
    fake_openai.script(Reply("I don't know."))
    await say(told, "where is it?")
    assert NEEDLE.decode() not in json.dumps(fake_openai.requests[-1]["messages"]).lower()
    found = await tool_result(told, fake_openai, "memory_search", {"query": "spare key blue pot"})
    assert "spare key" not in found.lower()

    [undone] = await say(told, "/undo")

    assert undone.startswith("Put back what the last /forget removed")
    assert {p: p.read_bytes() for p in before if p.name.endswith("MEMORY.md")} == {
        p: b for p, b in before.items() if p.name.endswith("MEMORY.md")
    }
    notes = "".join(p.read_text() for p in (workspace / "memory").glob("????-??-??.md"))
    assert SAID in notes
    sessions = "".join(p.read_text() for p in (workspace / "sessions").rglob("*.json"))
    assert SAID in sessions and "Remind me, the spare key is where?" in sessions
    assert await say(told, "/undo") == ["Nothing to undo."]


async def test_the_models_forget_reaches_the_turn_it_runs_in_and_undo_puts_it_back(
    told: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    """The turn's session was loaded before the tool forgot: what it saves must not bring the
    text back, nor its own messages (the request, the receipt, the reply) carry it."""
    fake_openai.script(
        ToolCalls([("memory_forget", {"text": "Spare Key"})]),
        Reply("Done: I no longer know where the spare key is."),
    )

    [reply] = await say(told, "Please forget where my spare key is.")

    assert reply == "Done: I no longer know where the spare key is."
    assert holding(workspace / "memory") == []
    assert holding(workspace / "sessions") == []
    assert holding(workspace / "index") == []
    session = "".join(p.read_text() for p in (workspace / "sessions").glob("*.json"))
    assert session.count(MARKER) >= 5  # 2 earlier messages, the request, the call, the reply
    [undone] = await say(told, "/undo")
    assert undone.startswith("Put back what the last /forget removed")
    sessions = "".join(p.read_text() for p in (workspace / "sessions").rglob("*.json"))
    assert SAID in sessions and "Remind me, the spare key is where?" in sessions


async def test_after_the_undo_window_the_text_is_gone_from_disk(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    memory = MemorySettings(undo_minutes=0)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=memory)
    async with started_app(settings) as app:
        fake_openai.script(Reply(f"Noted. <memory>{FACT}</memory>"))
        await say(app, SAID)
        [receipt] = await say(app, "/forget spare key")
        assert holding(workspace / "state")  # kept for /undo, for its window

        assert await say(app, "/undo") == [
            "Too late to undo: a /forget can be undone for 0 minutes."
        ]

    assert receipt.startswith("Forgot ")
    assert holding(workspace) == []


async def test_a_forget_reaches_a_pending_consolidation_of_the_chat_only(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    mine = _job(workspace, "mine", "telegram:1001")
    theirs = _job(workspace, "theirs", "telegram:2002")
    undo = UndoStore(workspace.undo_dir, keep=timedelta(minutes=10), now=Clock(NOW))
    forgetting = Forgetting(workspace, FileLocks(), undo)

    forgotten = await forgetting.forget(GLOBAL_SCOPE, "telegram:1001", "spare key")

    assert forgotten.counts == {"pending consolidation": 1}
    assert [m["content"] for m in json.loads(mine.read_text())["messages"]] == [MARKER, "ok"]
    assert SAID in theirs.read_text()
    assert await forgetting.restore("telegram:1001") is not None
    assert SAID in mine.read_text()


def _job(workspace: Workspace, name: str, session_key: str) -> Path:
    path = workspace.consolidation_dir / f"20261124T090000000000-{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "version": 1,
        "id": name,
        "chat_key": None,
        "session_key": session_key,
        "created_at": "2026-11-24T09:00:00+00:00",
        "messages": [{"role": "user", "content": SAID}, {"role": "assistant", "content": "ok"}],
    }
    path.write_text(json.dumps(document))
    return path


async def test_consolidation_is_never_shown_what_was_forgotten(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    """A small model shown `[forgotten]` copies it into MEMORY.md (Qwen2.5 1.5B did): the
    emptied messages are left out of the request, and a conversation of nothing else asks no
    model at /new."""
    settings = make_settings(workspace, telegram=None, openai=fake_openai)
    async with started_app(settings) as app:
        fake_openai.script(Reply("Noted, the spare key."), Reply("Porto, lovely."))
        await say(app, SAID)
        await say(app, "My sister lives in Porto.")
        await say(app, "/forget spare key")
        fake_openai.script(consolidated("[2026-11-24 09:00] Sister in Porto.", "- Sister: Porto"))

        closed = await say(app, "/new")

        [request] = fake_openai.requests[2:]
        shown = request["messages"][-1]["content"]
        assert "Porto" in shown and MARKER not in shown
        assert closed == [
            "Started a new conversation. I saved what mattered from the last one (2 messages) "
            "to memory."
        ]
        fake_openai.script(Reply("Noted, the spare key."))
        await say(app, SAID)
        await say(app, "/forget spare key")

        assert await say(app, "/new") == ["Started a new conversation. Your memory files are kept."]

        assert len(fake_openai.requests) == 4  # the turn only: no consolidation asked
    assert MARKER not in (workspace / "memory" / "MEMORY.md").read_text()


async def test_the_receipt_shows_a_forgotten_calls_arguments_not_a_blank(
    told: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        ToolCalls([("memory_add", {"text": "The spare key moved to the shed"})]), Reply("Saved.")
    )
    await say(told, "It is in the shed now.")

    [receipt] = await say(told, "/forget spare key")

    said = [line for line in receipt.splitlines() if line.startswith("sessions/")]
    assert said and all(line.split(": ", 1)[1].strip() for line in said)
    assert any('"text": "The spare key moved to the shed"' in line for line in said)
