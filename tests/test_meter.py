"""Prompt accounting: the offline estimate, corrected by the provider's reported prompt tokens."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.llm.meter import Calibration, PromptMeter, correction
from bot.llm.tokens import TokenCounter
from bot.llm.windows import ContextWindows
from bot.models import ChatMessage, Session
from bot.storage.marks import FACTOR, SYSTEM_TOKENS, decode_marks
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import small_window_settings, started_app
from tests.talk import say, session

COUNTER = TokenCounter()
WORDS = "word " * 100  # about 100 tokens


def counted(request: dict[str, Any]) -> tuple[int, int]:
    """Our count of what a request holds beyond its conversation (the system prompt, the
    message's context), and of all its messages."""
    messages = [ChatMessage(role=m["role"], content=m["content"]) for m in request["messages"]]
    beyond = [m for m in messages if m.role == "system"]
    tools = COUNTER.count(json.dumps(request["tools"]))  # as sent: what the meter counts
    return COUNTER.count_messages(beyond), COUNTER.count_messages(messages) + tools


@pytest.fixture
async def small_app(workspace: Path, tmp_path: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    """A 12,000-token window: compaction past 9,600."""
    settings = small_window_settings(workspace, tmp_path, fake_openai, window=12_000)
    async with started_app(settings) as app:
        yield app


async def test_a_turn_records_the_system_prompt_size_and_the_correction_factor(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("hello", prompt_tokens=2500))
    await say(app, "hi there")

    system, everything = counted(fake_openai.last_request)
    metadata = session(workspace)["metadata"]

    assert metadata[SYSTEM_TOKENS] == str(system)
    assert metadata[FACTOR] == f"{2500 / everything:.4f}"


@pytest.mark.parametrize(("reported", "factor"), [(10**6, "3.0000"), (1, "0.5000")])
async def test_the_factor_is_clamped(
    app: App, fake_openai: FakeOpenAI, workspace: Path, reported: int, factor: str
) -> None:
    fake_openai.script(Reply("hello", prompt_tokens=reported))
    await say(app, "hi there")

    assert session(workspace)["metadata"][FACTOR] == factor


async def test_status_shows_the_corrected_estimate_with_its_margin(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("hello", prompt_tokens=1000))
    await say(app, "hi there")
    saved = session(workspace)
    messages = [ChatMessage(role=m["role"], content=m["content"]) for m in saved["messages"]]
    system, factor = int(saved["metadata"][SYSTEM_TOKENS]), float(saved["metadata"][FACTOR])

    [status] = await say(app, "/status verbose")

    tools = COUNTER.count(json.dumps(fake_openai.last_request["tools"]))
    expected = math.ceil((system + tools + COUNTER.count_messages(messages)) * factor * 1.1)
    lines = status.splitlines()
    assert f"Context: {expected:,} of 32,768 tokens" in lines[1]  # the one "how full" figure
    assert any(line.endswith(f"+ 10% margin = {expected:,}") for line in lines)


async def test_a_high_reported_count_makes_the_next_turn_compact(
    small_app: App, fake_openai: FakeOpenAI
) -> None:
    """Our count stays far under the threshold; the provider says the prompt is 3x that."""
    fake_openai.answer_all(lambda request: Reply("fine"))
    for _ in range(14):
        await say(small_app, WORDS)
    assert all(r["model"] == "fake-model" for r in fake_openai.requests)
    fake_openai.script(Reply("fine", prompt_tokens=10**5))
    await say(small_app, WORDS)
    fake_openai.script(Reply("the summary"), Reply("after"))

    assert await say(small_app, WORDS) == ["after"]

    summary_request, answered = fake_openai.requests[-2:]
    assert summary_request["model"] == "fake-fast"
    assert answered["messages"][1]["content"] == "[Conversation summary]\nthe summary"


def test_without_metadata_the_default_system_size_is_assumed() -> None:
    meter = PromptMeter(COUNTER, ContextWindows(default=8000), "any-model", system_tokens=1000)
    moment = datetime(2026, 11, 21, tzinfo=UTC)
    empty = Session(key="k", messages=(), created_at=moment, updated_at=moment)
    user = ChatMessage(role="user", content="hello world")

    estimate = meter.estimate(empty, (user,))

    assert meter.window == estimate.window == 8000
    assert estimate.counted == 1000 + meter.memory_room() + COUNTER.count_messages([user])
    assert meter.memory_room() > 0
    assert estimate.tokens == math.ceil(estimate.counted * 1.1)
    assert estimate.share == estimate.tokens / 8000


def test_calibration_without_a_reported_count_keeps_the_factor_alone() -> None:
    meter = PromptMeter(COUNTER, ContextWindows(), "m", system_tokens=1000)

    user = ChatMessage(role="user", content="hi")
    update = meter.calibrate(
        request=(_system("You are Mnemo."), user), conversation=(user,), reported=None
    )

    assert update == Calibration(COUNTER.count_messages([_system("You are Mnemo.")]))


@pytest.mark.parametrize(
    ("stored", "factor"),
    [(None, 1.0), ("1.25", 1.25), ("abc", 1.0), ("nan", 1.0), ("inf", 1.0), ("9", 3.0)],
)
def test_a_stored_factor_is_read_safely(stored: str | None, factor: float) -> None:
    assert correction(decode_marks({} if stored is None else {FACTOR: stored})) == factor


def _system(text: str) -> ChatMessage:
    return ChatMessage(role="system", content=text)
