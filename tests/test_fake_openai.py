"""The fake OpenAI server speaks the protocol the real openai 3.x SDK expects."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)

from tests.fakes.openai_api import (
    ContextOverflow,
    Fail,
    FakeOpenAI,
    Hang,
    Reply,
    Respond,
    ToolCalls,
)

MODEL = "gpt-test"
# 15 characters of content: 3 rough prompt tokens.
USER: ChatCompletionUserMessageParam = {"role": "user", "content": "hi there friend"}


def client_for(fake: FakeOpenAI, api_key: str = "sk-test") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=fake.base_url, api_key=api_key, max_retries=0, timeout=5)


@pytest.fixture
async def client(fake_openai: FakeOpenAI) -> AsyncIterator[openai.AsyncOpenAI]:
    async with client_for(fake_openai) as real_client:
        yield real_client


async def test_reply_with_usage_and_recorded_request(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hello!"))

    response = await client.chat.completions.create(model=MODEL, messages=[USER])

    choice = response.choices[0]
    assert choice.message.content == "Hello!"
    assert choice.finish_reason == "stop"
    assert response.usage is not None and response.usage.prompt_tokens == 3
    assert fake_openai.last_request["messages"] == [USER]
    assert fake_openai.request_headers[0]["authorization"] == "Bearer sk-test"
    assert fake_openai.calls == 1


async def test_tool_calls_parse_and_a_complete_tool_round_trip_is_accepted(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        ToolCalls([("remember", {"fact": "likes tea"}), ("search", {"query": "tea"})]),
        Reply("Noted.", prompt_tokens=9000),
    )

    first = await client.chat.completions.create(model=MODEL, messages=[USER])
    message = first.choices[0].message
    calls = [
        c for c in message.tool_calls or [] if isinstance(c, ChatCompletionMessageFunctionToolCall)
    ]
    assistant: ChatCompletionAssistantMessageParam = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in calls
        ],
    }
    history: list[ChatCompletionMessageParam] = [USER, assistant]
    history += [{"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in calls]
    second = await client.chat.completions.create(model=MODEL, messages=history)

    assert first.choices[0].finish_reason == "tool_calls"
    assert [c.id for c in calls] == ["call_1", "call_2"]
    assert [c.function.name for c in calls] == ["remember", "search"]
    assert json.loads(calls[0].function.arguments) == {"fact": "likes tea"}
    assert second.choices[0].message.content == "Noted."
    assert second.usage is not None and second.usage.prompt_tokens == 9000


async def test_orphan_tool_message_is_rejected_without_using_the_script(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("unused until the history is fixed"))
    orphan: ChatCompletionToolMessageParam = {"role": "tool", "tool_call_id": "c9", "content": "ok"}

    with pytest.raises(openai.BadRequestError, match="preceeding message with 'tool_calls'"):
        await client.chat.completions.create(model=MODEL, messages=[USER, orphan])

    assert fake_openai.remaining == 1
    await client.chat.completions.create(model=MODEL, messages=[USER])  # use it up for teardown


async def test_context_overflow_raises_bad_request_with_code(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(ContextOverflow())

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=[USER])

    assert caught.value.status_code == 400
    assert caught.value.code == "context_length_exceeded"
    assert "maximum context length is 8192 tokens" in caught.value.message


async def test_scripted_failure_maps_to_sdk_error(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Fail(429, "Rate limit reached", code="rate_limit_exceeded", retry_after=1))

    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model=MODEL, messages=[USER])

    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.response.headers["retry-after"] == "1"


async def test_streaming_text_with_usage(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hello streaming world", prompt_tokens=123))

    stream = await client.chat.completions.create(
        model=MODEL, messages=[USER], stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]

    pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert len([p for p in pieces if p]) > 1  # really streamed in pieces
    assert "".join(pieces) == "Hello streaming world"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 123


async def test_a_streamed_answer_comes_in_the_pieces_asked_for_with_pauses(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("abcdefghij", pieces=5, chunk_delay=0.05))
    loop = asyncio.get_running_loop()

    stream = await client.chat.completions.create(model=MODEL, messages=[USER], stream=True)
    arrivals = [(loop.time(), c.choices[0].delta.content) async for c in stream if c.choices]

    texts = [text for _, text in arrivals if text]
    assert texts == ["ab", "cd", "ef", "gh", "ij"]
    times = [at for at, text in arrivals if text]
    assert times[-1] - times[0] >= 0.15  # four pauses between five pieces


@pytest.mark.parametrize(
    ("step", "error"),
    [
        (Reply("abcdefghij", pieces=5, fail_after=2), openai.APIError),
        (Reply("abcdefghij", pieces=5, cut_after=2), openai.APIConnectionError),
    ],
    ids=["error-event", "connection-cut"],
)
async def test_a_stream_can_fail_halfway(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI, step: Reply, error: type[Exception]
) -> None:
    fake_openai.script(step)
    texts: list[str] = []

    stream = await client.chat.completions.create(model=MODEL, messages=[USER], stream=True)
    with pytest.raises(error):
        async for chunk in stream:
            texts.extend(c.delta.content for c in chunk.choices if c.delta.content)

    assert texts == ["ab", "cd"]


async def test_streaming_tool_call_arguments_arrive_in_fragments(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    arguments = {"fact": "the user's cat is called Miso", "tags": ["pets"]}
    fake_openai.script(ToolCalls([("remember", arguments)]))

    stream = await client.chat.completions.create(model=MODEL, messages=[USER], stream=True)
    fragments: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    finish = None
    async for chunk in stream:
        delta = chunk.choices[0].delta
        finish = chunk.choices[0].finish_reason or finish
        for call in delta.tool_calls or []:
            assert call.function is not None
            if call.function.name:
                names[call.index] = call.function.name
            fragments.setdefault(call.index, []).append(call.function.arguments or "")

    assert names == {0: "remember"}
    assert len([f for f in fragments[0] if f]) > 1
    assert json.loads("".join(fragments[0])) == arguments
    assert finish == "tool_calls"


async def test_respond_and_default_answer_dynamically(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    def echo(request: dict[str, Any]) -> Reply:
        return Reply("echo: " + request["messages"][-1]["content"])

    fake_openai.script(Respond(echo))
    fake_openai.answer_all(lambda _request: Reply("default"))

    first = await client.chat.completions.create(model=MODEL, messages=[USER])
    rest = [await client.chat.completions.create(model=MODEL, messages=[USER]) for _ in range(2)]

    assert first.choices[0].message.content == "echo: hi there friend"
    assert [r.choices[0].message.content for r in rest] == ["default", "default"]


async def test_hang_holds_until_released(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Hang(then=Reply("late")), Hang())

    held = asyncio.create_task(client.chat.completions.create(model=MODEL, messages=[USER]))
    await fake_openai.wait_until_hanging()
    assert not held.done()
    fake_openai.release()
    response = await held

    cancelled = asyncio.create_task(client.chat.completions.create(model=MODEL, messages=[USER]))
    await fake_openai.wait_until_hanging()
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled

    assert response.choices[0].message.content == "late"
    assert fake_openai.hanging == 1  # the cancelled one is still held; stop() frees it


async def test_over_call_and_unused_steps_fail_assert_done() -> None:
    async with FakeOpenAI() as fake, client_for(fake) as real_client:
        with pytest.raises(openai.InternalServerError, match="script is empty"):
            await real_client.chat.completions.create(model=MODEL, messages=[USER])
        with pytest.raises(AssertionError, match="1 chat completion call"):
            fake.assert_done()

    async with FakeOpenAI() as unused:
        unused.script(Reply("never asked"))
        with pytest.raises(AssertionError, match="never used"):
            unused.assert_done()


async def test_wrong_api_key_is_rejected() -> None:
    async with FakeOpenAI(api_key="sk-right") as fake, client_for(fake, "sk-wrong") as bad:
        with pytest.raises(openai.AuthenticationError, match="API key provided: sk-wrong"):
            await bad.chat.completions.create(model=MODEL, messages=[USER])
        fake.assert_done()


async def test_embeddings_are_deterministic_unit_vectors(
    client: openai.AsyncOpenAI, fake_openai: FakeOpenAI
) -> None:
    # The SDK asks for base64 unless told otherwise; the fake answers both ways.
    first = await client.embeddings.create(model="emb-test", input=["tea", "coffee"])
    again = await client.embeddings.create(model="emb-test", input="tea", encoding_format="float")

    tea, coffee = (d.embedding for d in first.data)
    assert len(tea) == 16
    assert math.isclose(math.fsum(v * v for v in tea), 1.0, rel_tol=1e-5)
    assert tea != coffee
    assert again.data[0].embedding == pytest.approx(tea, rel=1e-6)
    assert first.usage.prompt_tokens == len("teacoffee") // 4


async def test_models_lists_names_seen(client: openai.AsyncOpenAI, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply("hi"))
    await client.chat.completions.create(model=MODEL, messages=[USER])

    models = [model.id async for model in client.models.list()]

    assert models == ["fake-model", MODEL]
