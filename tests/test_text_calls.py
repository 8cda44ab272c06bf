"""Tool calls a small model wrote as text (`bot.llm.text_calls`), and the tool loop running them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from bot.llm.openai_chat import OpenAIChat
from bot.llm.text_calls import calls_in_text
from tests.fakes.openai_api import Reply
from tests.test_tool_loop import Echo, RawArgumentsOpenAI, make_ctx, tool_loop

TOOLS = {"echo", "memory_search"}


@pytest.fixture
async def model() -> AsyncIterator[RawArgumentsOpenAI]:
    async with RawArgumentsOpenAI() as fake:
        yield fake
    fake.assert_done()


@pytest.fixture
async def llm(model: RawArgumentsOpenAI) -> AsyncIterator[OpenAIChat]:
    chat = OpenAIChat(
        base_url=model.base_url, api_key="sk-test", model="fake-model", timeout=5, max_retries=0
    )
    yield chat
    await chat.close()


def named(text: str) -> list[tuple[str, dict[str, object]]]:
    return [(call.name, json.loads(call.arguments)) for call in calls_in_text(text, TOOLS)]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "echo", "arguments": {"text": "hi"}}',
        '```json\n{"name": "echo", "arguments": {"text": "hi"}}\n```',
        '<tool_call>\n{"name": "echo", "arguments": {"text": "hi"}}\n</tool_call>',
        '{"name": "echo", "parameters": {"text": "hi"}}',
        '{"name": "echo", "arguments": "{\\"text\\": \\"hi\\"}"}',
        '{"type": "function", "function": {"name": "echo", "arguments": {"text": "hi"}}}',
    ],
)
def test_a_message_that_is_only_a_call_is_that_call(text: str) -> None:
    assert named(text) == [("echo", {"text": "hi"})]


def test_several_calls_in_tags_a_list_or_one_after_another() -> None:
    tags = (
        '<tool_call>{"name": "echo", "arguments": {"text": "a"}}</tool_call>\n'
        '<tool_call>{"name": "memory_search", "arguments": {"query": "b"}}</tool_call>'
    )
    listed = '[{"name": "echo", "arguments": {"text": "a"}}, {"name": "echo", "arguments": {}}]'
    lines = '{"name": "echo", "arguments": {"text": "a"}}\n{"name": "echo", "arguments": {}}'

    assert named(tags) == [("echo", {"text": "a"}), ("memory_search", {"query": "b"})]
    assert named(listed) == named(lines) == [("echo", {"text": "a"}), ("echo", {})]
    assert [c.id for c in calls_in_text(lines, TOOLS)] == ["call_text_1", "call_text_2"]


@pytest.mark.parametrize(
    "text",
    [
        'Sure! {"name": "echo", "arguments": {"text": "hi"}}',  # words around it
        '{"name": "launch", "arguments": {}}',  # not a tool offered
        '{"name": "echo", "arguments": ["hi"]}',  # arguments not an object
        '{"name": "echo", "arguments": "not json"}',
        '{"name": "echo", "arguments": {"text": "a"}} and more',
        '{"city": "Porto", "name": "Ann"}',  # JSON the user asked for
        "```json\n[1, 2, 3]\n```",
        "The answer is 42.",
        "",
    ],
)
def test_anything_else_stays_text(text: str) -> None:
    assert calls_in_text(text, TOOLS) == ()


def test_without_tools_offered_nothing_is_a_call() -> None:
    assert calls_in_text('{"name": "echo", "arguments": {}}', ()) == ()


async def test_the_loop_runs_a_call_written_as_text_and_the_user_gets_the_answer(
    llm: OpenAIChat, model: RawArgumentsOpenAI
) -> None:
    echo = Echo()
    written = '```json\n{"name": "echo", "arguments": {"text": "ping"}}\n```'
    model.script(Reply(written), Reply("The tool said ping."))
    ctx = make_ctx("use the tool")

    await tool_loop(llm, echo).process(ctx)

    assert ctx.reply == "The tool said ping."
    assert [args for args, _ in echo.calls] == [{"text": "ping"}]
    *_, assistant, tool = model.requests[1]["messages"]
    assert assistant["tool_calls"][0]["function"] == {
        "name": "echo",
        "arguments": '{"text": "ping"}',
    }
    assert tool["content"] == "echo: ping" and tool["tool_call_id"] == "call_text_1"
