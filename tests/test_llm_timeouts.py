"""The model's timeouts measure progress (answers are streamed, `bot.llm.stream`): a slow model
that keeps answering is never cut off, a silent one is, with a line that says what to change."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from bot.errors import LLMUnavailable
from bot.llm.openai_chat import OpenAIChat
from bot.models import ChatMessage, ToolCall
from bot.settings import CompactionSettings, LLMSettings, MemorySettings
from tests.fakes.openai_api import FakeOpenAI, Hang, Reply, ToolCalls

HELLO = [ChatMessage(role="user", content="hello")]

MakeChat = Callable[..., OpenAIChat]


@pytest.fixture
async def make_chat(fake_openai: FakeOpenAI) -> AsyncIterator[MakeChat]:
    made: list[OpenAIChat] = []

    def make(**limits: Any) -> OpenAIChat:
        chat = OpenAIChat(
            base_url=fake_openai.base_url, api_key="sk-test", model="m", max_retries=0, **limits
        )
        made.append(chat)
        return chat

    yield make
    for chat in made:
        await chat.close()


async def test_a_slow_model_that_keeps_answering_is_not_cut_off(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    # reads the prompt for 1 s, then a piece every 0.3 s: 2.8 s in all, over both limits
    fake_openai.script(Reply("one two three four five six", delay=1.0, chunk_delay=0.3))
    chat = make_chat(first_token_timeout=2.0, timeout=0.6)

    begun = time.monotonic()
    completion = await chat.complete(HELLO)

    assert completion.content == "one two three four five six"
    assert time.monotonic() - begun > 2.0


async def test_tool_calls_arrive_whole_however_slowly_they_stream(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(ToolCalls([("echo", {"text": "hi there"})], delay=0.5, chunk_delay=0.2))

    completion = await make_chat(first_token_timeout=2.0, timeout=0.6).complete(HELLO)

    assert completion.tool_calls == (
        ToolCall(id="call_1", name="echo", arguments='{"text": "hi there"}'),
    )


async def test_a_model_that_never_starts_is_cut_off_at_the_first_token_timeout(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Hang())

    begun = time.monotonic()
    with pytest.raises(LLMUnavailable) as raised:
        await make_chat(first_token_timeout=0.5, timeout=5.0).complete(HELLO)

    assert time.monotonic() - begun < 2.0
    assert "did not answer in time (0.5 s without a word)" in str(raised.value)
    assert "BOT_LLM__FIRST_TOKEN_TIMEOUT" in str(raised.value)


async def test_a_model_that_stops_mid_answer_is_cut_off_at_the_timeout(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("one two three", chunk_delay=3.0))

    begun = time.monotonic()
    with pytest.raises(LLMUnavailable) as raised:
        await make_chat(first_token_timeout=5.0, timeout=0.4).complete(HELLO)

    assert time.monotonic() - begun < 2.0
    assert "stopped answering for 0.4 s mid-answer" in str(raised.value)
    assert "BOT_LLM__TIMEOUT" in str(raised.value)


def test_the_defaults_wait_for_a_small_model_on_a_cpu() -> None:
    """Qwen2.5-Coder 1.5B on llama.cpp, 2 cores: ~30 prompt tokens/s, ~6 written tokens/s. A
    first prompt of 1,700 tokens took 40-60 s; a consolidation writes up to ~2,000 tokens."""
    prompt_seconds = 4_000 / 30  # a long first prompt, nothing cached
    assert LLMSettings().first_token_timeout >= 2 * prompt_seconds
    assert MemorySettings().consolidation_timeout >= prompt_seconds + 2_000 / 6
    assert CompactionSettings().summary_timeout >= prompt_seconds + 500 / 6
