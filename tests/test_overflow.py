"""Overflow recovery (seed 004): the model says "context length exceeded" → compact once and
run the same turn again; if it still does not fit, say so plainly and keep the session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.app import App
from bot.llm.failures import TOO_LONG
from tests.fakes.openai_api import ContextOverflow, FakeOpenAI, Reply, ToolCalls
from tests.harness import small_window_settings, started_app
from tests.talk import conversation, say, session

SUMMARY = "[Conversation summary]\nthe summary"


@pytest.fixture
async def app(workspace: Path, tmp_path: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    """Keeps 4 messages when compacting (2 after an overflow); the window is never reached."""
    async with started_app(small_window_settings(workspace, tmp_path, fake_openai)) as app:
        yield app


async def talk(app: App, fake: FakeOpenAI) -> None:
    fake.script(Reply("a1"), Reply("a2"), Reply("a3"))
    for text in ("q1", "q2", "q3"):
        await say(app, text)


def contents(workspace: Path) -> list[str]:
    return [m["content"] for m in session(workspace)["messages"]]


def inbox(workspace: Path) -> list[Path]:
    return list((workspace / "state" / "inbox").iterdir())


async def test_an_overflow_compacts_and_the_same_turn_runs_again(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    await talk(app, fake_openai)
    fake_openai.script(ContextOverflow(), Reply("the summary"), Reply("fits now"))

    with capture_logs() as logs:
        assert await say(app, "q4") == ["fits now"]

    overflowed, summary, retried = fake_openai.requests[-3:]
    assert summary["model"] == "fake-fast"
    assert [m["content"] for m in conversation(overflowed)] == [
        "q1",
        "a1",
        "q2",
        "a2",
        "q3",
        "a3",
        "q4",
    ]
    assert [m["content"] for m in conversation(retried)] == [SUMMARY, "q3", "a3", "q4"]
    assert contents(workspace) == [SUMMARY, "q3", "a3", "q4", "fits now"]
    assert session(workspace)["compactions"] == 1
    [compacted] = [e for e in logs if e["event"] == "compacted"]
    assert (compacted["reason"], compacted["removed"], compacted["kept"]) == ("overflow", 4, 2)
    assert "turn_retry_after_overflow" in [e["event"] for e in logs]
    history = (workspace / "memory" / "HISTORY.md").read_text()
    assert "[checkpoint] 4 messages before compaction (overflow)" in history
    assert inbox(workspace) == []


async def test_the_retry_starts_from_a_fresh_turn(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    """The first attempt's tool call is not kept: the retried turn calls the tool again."""
    await talk(app, fake_openai)
    fake_openai.script(
        ToolCalls([("current_time", {})]),
        ContextOverflow(),
        Reply("the summary"),
        ToolCalls([("current_time", {})]),
        Reply("it is late"),
    )

    assert await say(app, "time?") == ["it is late"]

    roles = [m["role"] for m in session(workspace)["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "tool", "assistant"]


async def test_an_overflow_after_compacting_is_told_plainly_and_the_session_kept(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    await talk(app, fake_openai)
    fake_openai.script(ContextOverflow(), Reply("the summary"), ContextOverflow())

    with capture_logs() as logs:
        assert await say(app, "q4") == [
            "This conversation is too long for the model even after compacting it. "
            "Use /new to start fresh."
        ]

    assert contents(workspace) == [SUMMARY, "q3", "a3"]
    assert session(workspace)["compactions"] == 1
    assert "turn_overflow_again" in [e["event"] for e in logs]
    assert inbox(workspace) == []
    fake_openai.script(Reply("fresh"))
    assert await say(app, "shorter") == ["fresh"]


async def test_with_compaction_off_an_overflow_is_not_retried(
    workspace: Path, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = small_window_settings(workspace, tmp_path, fake_openai, enabled=False)
    async with started_app(settings) as app:
        await talk(app, fake_openai)
        before = (workspace / "sessions" / "telegram_1001.json").read_bytes()
        fake_openai.script(ContextOverflow())

        assert await say(app, "q4") == [TOO_LONG]

    assert (workspace / "sessions" / "telegram_1001.json").read_bytes() == before
    assert inbox(workspace) == []
