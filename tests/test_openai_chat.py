"""OpenAIChat against the fake server: the wire format, parameters, usage, and errors by intent."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest

from bot.errors import ContextOverflow, LLMError, LLMRejected, LLMUnavailable
from bot.llm.openai_chat import OpenAIChat
from bot.models import ChatMessage, Completion, ToolCall, ToolSpec, Usage
from tests.fakes import openai_api as fake
from tests.fakes.openai_api import Fail, FakeOpenAI, Reply, Step, ToolCalls

API_KEY = "sk-test-0123456789abcdef"
HELLO = [ChatMessage(role="user", content="hello")]
ECHO = ToolSpec(
    name="echo",
    description="Says the text back.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}},
)

MakeChat = Callable[..., OpenAIChat]


@pytest.fixture
async def make_chat(fake_openai: FakeOpenAI) -> AsyncIterator[MakeChat]:
    made: list[OpenAIChat] = []

    def make(**overrides: Any) -> OpenAIChat:
        options: dict[str, Any] = {
            "base_url": fake_openai.base_url,
            "api_key": API_KEY,
            "model": "fake-model",
            "timeout": 5.0,
            "max_retries": 0,
        }
        made.append(OpenAIChat(**(options | overrides)))
        return made[-1]

    yield make
    for chat in made:
        await chat.close()


async def test_messages_and_tools_go_out_in_openai_wire_format(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))
    call = ToolCall(id="call_9", name="echo", arguments='{"text": "x"}')
    messages = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="echo x"),
        ChatMessage(role="assistant", content=None, tool_calls=(call,)),
        ChatMessage(role="tool", content="echo: x", tool_call_id="call_9", name="echo"),
        ChatMessage(role="assistant", content="It said x."),
        ChatMessage(role="user", content="thanks"),
    ]

    await make_chat().complete(messages, tools=[ECHO])

    request = fake_openai.last_request
    assert request["model"] == "fake-model"
    assert request["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "echo x"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "echo", "arguments": '{"text": "x"}'},
                }
            ],
        },
        {"role": "tool", "content": "echo: x", "tool_call_id": "call_9"},
        {"role": "assistant", "content": "It said x."},
        {"role": "user", "content": "thanks"},
    ]
    assert request["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "echo",
                "description": "Says the text back.",
                "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
            },
        }
    ]


async def test_tools_go_out_without_the_limits_they_check_themselves(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))
    bounded = {"type": "integer", "minimum": 1, "maximum": 20}
    search = ToolSpec(
        name="search",
        description="Finds things.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 1000},
                "maximum": bounded,  # a property may be called so
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 40}},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    )

    await make_chat().complete([ChatMessage(role="user", content="hi")], tools=[search])

    assert fake_openai.last_request["tools"][0]["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "maximum": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["query"],
    }
    assert search.parameters["additionalProperties"] is False  # the tool's own schema is whole


async def test_without_tools_or_settings_the_request_carries_none_of_them(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))

    await make_chat().complete(HELLO)

    assert set(fake_openai.last_request) == {"model", "messages", "stream", "stream_options"}


async def test_configured_temperature_and_max_tokens_are_sent(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))

    await make_chat(temperature=0.3, max_tokens=50).complete(HELLO)

    assert fake_openai.last_request["temperature"] == 0.3
    assert fake_openai.last_request["max_tokens"] == 50


async def test_per_call_model_temperature_and_max_tokens_win(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))

    await make_chat(temperature=0.3, max_tokens=50).complete(
        HELLO, model="fast-model", temperature=0.0, max_tokens=10
    )

    request = fake_openai.last_request
    assert (request["model"], request["temperature"], request["max_tokens"]) == (
        "fast-model",
        0.0,
        10,
    )


async def test_the_authorization_header_carries_the_api_key(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))

    await make_chat().complete(HELLO)

    assert fake_openai.request_headers[0]["authorization"] == f"Bearer {API_KEY}"


async def test_text_usage_and_model_are_parsed(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hello there, friend.", prompt_tokens=1234))

    completion = await make_chat().complete(HELLO)

    assert completion == Completion(
        content="Hello there, friend.",
        tool_calls=(),
        usage=Usage(prompt_tokens=1234, completion_tokens=5),
        model="fake-model",
    )


async def test_tool_calls_are_parsed_with_their_json_text(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(ToolCalls([("echo", {"text": "x"}), ("clock", {})], text="Checking."))

    completion = await make_chat().complete(HELLO, tools=[ECHO])

    assert completion.content == "Checking."
    assert completion.tool_calls == (
        ToolCall(id="call_1", name="echo", arguments='{"text": "x"}'),
        ToolCall(id="call_2", name="clock", arguments="{}"),
    )


async def test_the_text_is_handed_on_piece_by_piece_as_it_arrives(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        ToolCalls([("echo", {"text": "x"})], text="Five words come in pieces", pieces=5)
    )
    pieces: list[str] = []

    completion = await make_chat().complete(HELLO, tools=[ECHO], on_text=pieces.append)

    assert len(pieces) == 5  # the tool call's fragments are not text
    assert "".join(pieces) == completion.content == "Five words come in pieces"


@pytest.mark.parametrize(
    "step",
    [
        Reply("Half of an answer that never ends", pieces=4, fail_after=2),
        Reply("Half of an answer that never ends", pieces=4, cut_after=2),
    ],
    ids=["error-event", "connection-cut"],
)
async def test_a_stream_failing_halfway_is_unavailable_after_its_first_pieces(
    make_chat: MakeChat, fake_openai: FakeOpenAI, step: Step
) -> None:
    fake_openai.script(step)
    pieces: list[str] = []

    with pytest.raises(LLMUnavailable):
        await make_chat().complete(HELLO, on_text=pieces.append)

    assert len(pieces) == 2


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (fake.ContextOverflow(), ContextOverflow),
        (Fail(413, "The prompt is too long for this model."), ContextOverflow),
        (Fail(400, "Invalid value for 'messages'."), LLMRejected),
        (Fail(401, "Incorrect API key provided.", code="invalid_api_key"), LLMRejected),
        (Fail(500, "The server had an error.", type="server_error"), LLMUnavailable),
        (Fail(503, "Overloaded.", type="server_error"), LLMUnavailable),
        (Fail(429, "Rate limit reached.", type="rate_limit_error"), LLMUnavailable),
    ],
    ids=["context-overflow", "413-too-long", "400", "401", "500", "503", "429"],
)
async def test_provider_errors_map_onto_the_error_tree(
    make_chat: MakeChat, fake_openai: FakeOpenAI, step: Step, expected: type[LLMError]
) -> None:
    fake_openai.script(step)

    with pytest.raises(LLMError) as raised:
        await make_chat().complete(HELLO)

    assert type(raised.value) is expected
    assert isinstance(raised.value.__cause__, openai.APIError)
    assert fake_openai.calls == 1  # max_retries=0: no retry


async def test_a_server_error_then_success_is_retried_by_the_sdk(
    make_chat: MakeChat, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Fail(500, "flaky", type="server_error"), Reply("second time lucky"))

    completion = await make_chat(max_retries=1).complete(HELLO)

    assert completion.content == "second time lucky"
    assert fake_openai.calls == 2


async def test_an_unreachable_server_is_unavailable(make_chat: MakeChat) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the request: connection refused

    with pytest.raises(LLMUnavailable) as raised:
        await make_chat(base_url=f"http://127.0.0.1:{port}/v1").complete(HELLO)
    assert str(raised.value) == (
        f"cannot reach the model at http://127.0.0.1:{port}/v1: check the network and "
        "BOT_LLM__BASE_URL"
    )


async def test_a_refused_key_names_the_variable_and_not_the_key() -> None:
    async with FakeOpenAI(api_key="sk-the-right-one") as strict:
        chat = OpenAIChat(
            base_url=strict.base_url, api_key=API_KEY, model="m", timeout=5, max_retries=0
        )
        with pytest.raises(LLMRejected) as raised:
            await chat.complete(HELLO)
        await chat.close()
    assert str(raised.value) == (
        f"the model at {strict.base_url} rejected the API key (HTTP 401): check BOT_LLM__API_KEY"
    )
    cause = raised.value.__cause__  # the provider echoed the key: only the log keeps it, cut
    assert isinstance(cause, openai.APIError) and API_KEY in cause.message
