"""Correct at any window: the window known per model (models.json, the setting, the limit a
provider states, remembered), every request fitted to it before it is sent, compaction that
keeps room, and requests laid out so that consecutive turns share their prefix."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.conversation.compaction import ROLE as SUMMARY_ROLE
from bot.conversation.flush import FLUSH_REQUEST
from bot.conversation.overflow import MESSAGE_TOO_LONG, TOO_LONG
from bot.memory.upkeep.requests import ROLE as CONSOLIDATION_ROLE
from bot.settings import CompactionSettings, LLMSettings
from bot.systems.context import CONTEXT_CLOSE
from tests.fakes.openai_api import FakeOpenAI, Reply, Step
from tests.harness import API_KEY, make_settings, models_file, started_app
from tests.talk import is_context, say, system_text, write
from tests.test_consolidation import settle

WORDS = [
    "garden",
    "tomato",
    "basil",
    "water",
    "sunlight",
    "soil",
    "recipe",
    "pasta",
    "garlic",
    "olive",
    "oven",
    "minutes",
    "salt",
    "travel",
    "train",
    "ticket",
    "museum",
    "morning",
    "coffee",
    "meeting",
    "project",
    "deadline",
    "report",
    "chapter",
    "draft",
]
NO_REPLY = "NO_REPLY"


@pytest.fixture
async def small_model() -> AsyncIterator[FakeOpenAI]:
    """A model with an 8,192-token window that refuses any longer prompt, as OpenAI does."""
    async with FakeOpenAI(api_key=API_KEY, window=8192) as server:
        yield server


def kind(request: dict[str, Any]) -> str:
    system = str(request["messages"][0]["content"] or "")
    if system.startswith(CONSOLIDATION_ROLE[:40]):
        return "consolidation"
    if system.startswith(SUMMARY_ROLE[:40]):
        return "summary"
    if request["messages"][-1]["content"] == FLUSH_REQUEST:
        return "flush"
    return "turn"


def answers(rng: random.Random) -> Any:
    """~100-token replies; consolidation gets its JSON, a flush nothing to say."""

    def answer(request: dict[str, Any]) -> Step:
        found = kind(request)
        if found == "consolidation":
            return Reply('{"history_entry": "[10:00] We talked.", "memory_update": null}')
        if found == "flush":
            return Reply(NO_REPLY)
        return Reply(" ".join(rng.choice(WORDS) for _ in range(90)).capitalize() + ".")

    return answer


async def test_with_an_8k_window_no_request_exceeds_it_and_few_calls_are_extra(
    workspace: Path, tmp_path: Path, small_model: FakeOpenAI
) -> None:
    rng = random.Random(3)
    small_model.answer_all(answers(rng))
    compaction = CompactionSettings(models_file=models_file(tmp_path, window=8192))
    settings = make_settings(workspace, telegram=None, openai=small_model, compaction=compaction)
    turns = 120
    async with started_app(settings) as app:
        for turn in range(turns):
            question = " ".join(rng.choice(WORDS) for _ in range(25))
            [reply] = await say(app, f"{turn}: {question}?")
            assert reply != TOO_LONG
        await settle(app)

    assert small_model.refused == []
    kinds = [kind(r) for r in small_model.requests]
    assert kinds.count("turn") == turns
    extra = {k: kinds.count(k) for k in set(kinds) - {"turn"}}
    assert len(kinds) - turns <= 0.1 * turns, extra  # summaries, flushes, consolidations


async def test_a_window_a_provider_states_is_learnt_and_remembered(
    workspace: Path, tmp_path: Path
) -> None:
    async with FakeOpenAI(api_key=API_KEY, window=6000) as model:  # models.json: 32,768
        model.answer_all(lambda request: Reply("fine"))
        settings = make_settings(workspace, telegram=None, openai=model)
        async with started_app(settings) as app:
            for turn in range(12):
                assert await say(app, f"{turn} " + "many words here " * 150) == ["fine"]
        learnt = json.loads((workspace / "state" / "windows.json").read_text())
        async with started_app(settings) as app:
            [status] = await say(app, "/status verbose")

    assert len(model.refused) == 1  # once, then never again
    assert learnt["context_windows"] == {"fake-model": 6000}
    assert "Context window: 6,000 tokens (as the provider stated it)" in status.splitlines()


async def test_the_setting_decides_the_window(workspace: Path, fake_openai: FakeOpenAI) -> None:
    llm = LLMSettings(
        base_url=fake_openai.base_url,
        api_key=SecretStr(API_KEY),
        model="fake-model",
        context_window=5000,
    )
    settings = make_settings(workspace, telegram=None, openai=fake_openai).model_copy(
        update={"llm": llm}
    )
    async with started_app(settings) as app:
        [status] = await say(app, "/status verbose")

    assert "Context window: 5,000 tokens (set by BOT_LLM__CONTEXT_WINDOW)" in status.splitlines()


async def test_a_request_that_cannot_fit_is_never_sent(
    workspace: Path, tmp_path: Path, small_model: FakeOpenAI
) -> None:
    compaction = CompactionSettings(models_file=models_file(tmp_path, window=8192))
    settings = make_settings(workspace, telegram=None, openai=small_model, compaction=compaction)
    async with started_app(settings) as app:
        assert await say(app, "tea " * 9000) == [MESSAGE_TOO_LONG]

    assert small_model.requests == []


async def test_memory_gets_a_share_of_a_small_window(
    workspace: Path, tmp_path: Path, small_model: FakeOpenAI
) -> None:
    lines = "".join(f"- fact {n}: the garden shed needs a new roof this year\n" for n in range(400))
    write(workspace, "MEMORY.md", lines)
    small_model.script(Reply("ok"))
    compaction = CompactionSettings(models_file=models_file(tmp_path, window=8192))
    settings = make_settings(workspace, telegram=None, openai=small_model, compaction=compaction)
    async with started_app(settings) as app:
        await say(app, "what about the shed?")

    [request] = small_model.requests
    assert small_model.refused == []
    system = system_text(request)
    assert "more lines not shown" in system  # cut to the window's share, and said so
    assert len(system) < 8192  # characters: well under a quarter of the window in tokens


async def test_consecutive_turns_share_their_prefix_and_the_time_comes_last(
    app: Any, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "- Ann likes green tea\n")
    fake_openai.answer_all(lambda request: Reply("fine"))
    for text in ("hello there", "what do I like to drink?", "and to eat?"):
        await say(app, text)

    first, second, third = (r["messages"] for r in fake_openai.requests)
    for before, after in ((first, second), (second, third)):
        stable = [m for m in before if not is_context(m)]
        assert after[: len(stable) - 1] == stable[:-1]  # all but the context and the message
        assert after[len(stable) - 1] == stable[-1]  # the message, then the reply after it
        assert after[0]["content"] == before[0]["content"]  # the system prompt did not move
    assert "Current time" not in third[0]["content"]
    assert "green tea" not in third[0]["content"]  # the persona's message never changes …
    assert third[1]["role"] == "system" and "- Ann likes green tea" in third[1]["content"]
    assert is_context(third[-2]) and third[-1] == {"role": "user", "content": "and to eat?"}


async def test_for_a_strict_chat_template_the_context_opens_the_message(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    write(workspace, "MEMORY.md", "- Ann likes green tea\n")
    settings = make_settings(workspace, telegram=None, openai=fake_openai)
    llm = settings.llm.model_copy(update={"context_role": "user"})
    fake_openai.answer_all(lambda request: Reply("fine"))
    async with started_app(settings.model_copy(update={"llm": llm})) as app:
        for text in ("hello there", "what do I like to drink?"):
            await say(app, text)

    first, second = (r["messages"] for r in fake_openai.requests)
    assert [m["role"] for m in first] == ["system", "user"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[1] == {"role": "user", "content": "hello there"}  # the session keeps it as said
    context, _, said = second[-1]["content"].partition(f"\n{CONTEXT_CLOSE}\n\n")
    assert said == "what do I like to drink?" and "Current time: " in context
    assert "green tea" in second[0]["content"] and CONTEXT_CLOSE in second[0]["content"]
