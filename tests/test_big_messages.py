"""No message can make a chat unusable: a kept message too large for the window is shortened
in the session (its full text stays in the archive, searchable) so the next turn fits."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI, Reply, Step
from tests.harness import small_window_settings, started_app
from tests.talk import say, session

WINDOW = 8192
GIANT = "\n".join(f"Line {i}: all work and no play makes a dull answer." for i in range(1200))


def answers(request: dict[str, Any]) -> Step:
    return Reply("the summary" if request["model"] == "fake-fast" else "fine")


@pytest.fixture
async def app(workspace: Path, tmp_path: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    settings = small_window_settings(workspace, tmp_path, fake_openai, window=WINDOW)
    async with started_app(settings) as app:
        yield app


def archived_texts(workspace: Path) -> str:
    return "\n".join(
        message.get("content") or ""
        for path in (workspace / "sessions" / "archive").glob("*.json")
        for message in json.loads(path.read_text())["messages"]
    )


async def test_a_giant_answer_is_shortened_in_the_session_and_the_chat_goes_on(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    assert len(GIANT) > 60_000
    fake_openai.script(Reply("a1"), Reply(GIANT))
    await say(app, "q1")
    assert await say(app, "write me the whole thing") == [GIANT]
    fake_openai.answer_all(answers)

    with capture_logs() as logs:
        for question in ("what time is it?", "and now?", "thanks"):
            assert await say(app, question) == ["fine"]

    kept = [m["content"] or "" for m in session(workspace)["messages"]]
    assert GIANT not in kept
    [shortened] = [text for text in kept if text.startswith("Line 0:")]
    assert len(shortened) < len(GIANT) // 4
    assert "shortened" in shortened
    assert GIANT in archived_texts(workspace)  # the full text is kept, and indexed from there
    assert "auto_compact_not_enough" not in [e["event"] for e in logs]
    assert all(rough < WINDOW for rough in fake_openai.refused) and not fake_openai.refused
