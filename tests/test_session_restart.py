"""A conversation the model keeps refusing: after the same persistent error three turns in a row
the chat is told, the old conversation is archived and summed up into memory, and the message is
answered in a new one (seed 004's hard recovery) instead of "…/new to start over" every turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.memory.upkeep.requests import ROLE as CONSOLIDATION_ROLE
from bot.settings import MemorySettings, SessionPolicySettings
from tests.fakes.openai_api import Fail, FakeOpenAI, Reply, Step
from tests.harness import make_settings, started_app
from tests.talk import say, session
from tests.test_consolidation import settle

REFUSAL = Fail(400, "Invalid 'messages[3].content': expected a string")
ENTRY = "[2026-11-21 09:00] Talked about the garden shed."


@pytest.fixture
async def app(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    settings = make_settings(workspace, telegram=None, openai=fake_openai)
    async with started_app(settings) as app:
        yield app


def consolidating(request: dict[str, Any]) -> Step:
    if str(request["messages"][0]["content"]).startswith(CONSOLIDATION_ROLE):
        return Reply(json.dumps({"history_entry": ENTRY}))
    return Reply("fresh answer")


async def test_the_third_refusal_in_a_row_starts_a_new_conversation_and_answers(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("the shed needs tar paper"))
    await say(app, "what does the shed need?")
    fake_openai.script(REFUSAL, REFUSAL, REFUSAL)
    fake_openai.answer_all(consolidating)

    first = await say(app, "and the roof?")
    second = await say(app, "hello?")
    third = await say(app, "are you there?")
    await settle(app)

    assert len(first) == len(second) == 1 and "/new to start over" in first[0]
    notice, answer = third
    assert notice.startswith("The model failed on our conversation 3 times in a row")
    assert "HTTP 400" in notice and "archived" in notice
    assert answer == "fresh answer"
    messages = [(m["role"], m["content"]) for m in session(workspace)["messages"]]
    assert messages == [("user", "are you there?"), ("assistant", "fresh answer")]
    [archived] = (workspace / "sessions" / "archive").glob("*.json")
    assert "the shed needs tar paper" in archived.read_text()
    assert ENTRY in (workspace / "memory" / "HISTORY.md").read_text()


async def test_a_passing_failure_or_an_answer_between_never_restarts(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    busy = Fail(503, "overloaded", type="server_error")
    fake_openai.script(REFUSAL, REFUSAL, Reply("here"), REFUSAL, REFUSAL, busy, busy, busy)

    replies = [(await say(app, f"m{n}"))[0] for n in range(8)]

    assert replies[2] == "here"
    assert not any("times in a row" in reply for reply in replies)
    assert not (workspace / "sessions" / "archive").exists()


async def test_zero_turns_the_restart_off(workspace: Path, fake_openai: FakeOpenAI) -> None:
    settings = make_settings(
        workspace,
        telegram=None,
        openai=fake_openai,
        memory=MemorySettings(receipts=False),
        session=SessionPolicySettings(restart_after_errors=0),
    )
    fake_openai.script(*[REFUSAL] * 5)
    async with started_app(settings) as app:
        replies = [(await say(app, f"m{n}"))[0] for n in range(5)]

    assert all("/new to start over" in reply for reply in replies)
