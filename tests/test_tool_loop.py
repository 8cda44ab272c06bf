"""System 30, the tool loop: tools run and answer the model, the step limit, failures as text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.errors import ToolError
from bot.llm.openai_chat import OpenAIChat
from bot.models import GLOBAL_SCOPE, ChatMessage, Inbound, Session, ToolSpec, Usage
from bot.pipeline import TurnContext
from bot.systems.origin import origin_of
from bot.systems.tool_loop import EMPTY_REPLY, ToolLoop
from bot.tools.registry import Tool, ToolContext, ToolRegistry
from tests.fakes.openai_api import FakeOpenAI, Reply, Step, ToolCalls

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
OBJECT: dict[str, object] = {"type": "object", "properties": {"text": {"type": "string"}}}


class Echo:
    spec = ToolSpec(name="echo", description="Says the text back.", parameters=OBJECT)

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], ToolContext]] = []

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.calls.append((args, ctx))
        return f"echo: {args['text']}"


class Broken:
    spec = ToolSpec(name="broken", description="Always fails.", parameters=OBJECT)

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        raise self.error


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake
    fake.assert_done()


@pytest.fixture
async def llm(model: FakeOpenAI) -> AsyncIterator[OpenAIChat]:
    chat = OpenAIChat(
        base_url=model.base_url, api_key="sk-test", model="fake-model", timeout=5, max_retries=0
    )
    yield chat
    await chat.close()


def make_ctx(text: str = "hi", history: tuple[ChatMessage, ...] = ()) -> TurnContext:
    inbound = Inbound(
        id="telegram:update:1",
        channel="telegram",
        chat_id=42,
        user_id=42,
        text=text,
        received_at=NOW,
    )
    return TurnContext(
        inbound=inbound,
        turn_id="t1",
        scope=GLOBAL_SCOPE,
        session=Session(key="telegram:42", messages=history, created_at=NOW, updated_at=NOW),
        user_message=ChatMessage(role="user", content=text, at=NOW),
        system_prompt="You are a test.",
    )


def tool_loop(llm: OpenAIChat, *tools: Tool, max_steps: int = 4) -> ToolLoop:
    return ToolLoop(llm, ToolRegistry(tools), max_steps=max_steps, now=lambda: NOW)


async def test_a_tool_call_runs_and_its_result_goes_back_with_the_same_id(
    llm: OpenAIChat, model: FakeOpenAI
) -> None:
    echo = Echo()
    model.script(ToolCalls([("echo", {"text": "ping"})]), Reply("The tool said ping."))
    ctx = make_ctx("use the tool")

    await tool_loop(llm, echo).process(ctx)

    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["echo"]
    *_, assistant, tool = model.requests[1]["messages"]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "echo", "arguments": '{"text": "ping"}'},
        }
    ]
    assert tool == {"role": "tool", "content": "echo: ping", "tool_call_id": "call_1"}
    assert ctx.reply == "The tool said ping."
    assert [m.role for m in ctx.new_messages] == ["assistant", "tool", "assistant"]
    [(args, tool_ctx)] = echo.calls
    assert args == {"text": "ping"}
    assert (tool_ctx.session_key, tool_ctx.scope, tool_ctx.inbound) == (
        "telegram:42",
        GLOBAL_SCOPE,
        ctx.inbound,
    )
    assert tool_ctx.origin is not None and tool_ctx.origin.trusted  # before the echo's output
    assert tool_ctx.origin.said.by == "user (42)"
    assert origin_of(ctx).quoted == "tool"  # after it: the echo is not one of the memory tools


async def test_several_calls_in_one_step_each_get_an_answer_in_order(
    llm: OpenAIChat, model: FakeOpenAI
) -> None:
    model.script(ToolCalls([("echo", {"text": "a"}), ("echo", {"text": "b"})]), Reply("Both done."))
    ctx = make_ctx()

    await tool_loop(llm, Echo()).process(ctx)

    tools = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [
        ("call_1", "echo: a"),
        ("call_2", "echo: b"),
    ]
    assert ctx.reply == "Both done."


async def test_the_prompt_is_system_then_history_then_the_new_message(
    llm: OpenAIChat, model: FakeOpenAI
) -> None:
    history = (
        ChatMessage(role="user", content="earlier question"),
        ChatMessage(role="assistant", content="earlier answer"),
    )
    model.script(Reply("ok"))

    await tool_loop(llm).process(make_ctx("now", history))

    assert model.last_request["messages"] == [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": "earlier answer"},
        {"role": "user", "content": "now"},
    ]


async def test_at_the_step_limit_no_tools_are_offered_and_the_turn_ends_with_text(
    llm: OpenAIChat, model: FakeOpenAI
) -> None:
    echo = Echo()
    model.script(
        ToolCalls([("echo", {"text": "1"})]),
        ToolCalls([("echo", {"text": "2"})], text="I would like more tools."),
    )
    ctx = make_ctx()

    await tool_loop(llm, echo, max_steps=2).process(ctx)

    first, last = model.requests
    assert "tools" in first
    assert "tools" not in last
    assert ctx.reply == "I would like more tools."
    assert len(echo.calls) == 1  # the call asked for at the last step was not run
    assert ctx.new_messages[-1].tool_calls == ()  # no unanswered call left for the session


async def test_with_one_step_the_model_is_never_offered_tools(
    llm: OpenAIChat, model: FakeOpenAI
) -> None:
    model.script(Reply("plain"))

    await tool_loop(llm, Echo(), max_steps=1).process(make_ctx())

    assert "tools" not in model.last_request


@pytest.mark.parametrize(
    ("call", "tool", "error"),
    [
        (("nope", {}), Echo(), "error: no tool named 'nope'"),
        (("echo", "{not json"), Echo(), "error: arguments are not valid JSON"),
        (("echo", "[1, 2]"), Echo(), "error: arguments must be a JSON object"),
        (
            ("broken", {}),
            Broken(RuntimeError("db password is hunter2")),
            "error: the tool 'broken' failed",
        ),
        (("broken", {}), Broken(ToolError("file not found")), "error: file not found"),
    ],
    ids=["unknown-tool", "invalid-json", "not-an-object", "tool-raises", "tool-error"],
)
async def test_a_tool_failure_goes_back_to_the_model_as_text_and_the_turn_goes_on(
    llm: OpenAIChat,
    model: FakeOpenAI,
    call: tuple[str, dict[str, Any] | str],
    tool: Tool,
    error: str,
) -> None:
    model.script(ToolCalls([call]), Reply("Recovered."))
    ctx = make_ctx()

    await tool_loop(llm, tool).process(ctx)

    tool_message = model.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_1"
    assert tool_message["content"].startswith(error)
    assert "hunter2" not in tool_message["content"]
    assert ctx.reply == "Recovered."


@pytest.mark.parametrize("step", [Reply(""), Reply("  \n ")], ids=["empty", "whitespace"])
async def test_an_empty_answer_becomes_the_empty_reply_notice(
    llm: OpenAIChat, model: FakeOpenAI, step: Step
) -> None:
    model.script(step)
    ctx = make_ctx()

    await tool_loop(llm).process(ctx)

    assert ctx.reply == EMPTY_REPLY


async def test_usage_of_every_completion_and_the_model_are_recorded(
    llm: OpenAIChat, model: FakeOpenAI
) -> None:
    model.script(
        ToolCalls([("echo", {"text": "x"})], prompt_tokens=100),
        Reply("abcdefgh", prompt_tokens=250),
    )
    ctx = make_ctx()

    await tool_loop(llm, Echo()).process(ctx)

    assert [u.prompt_tokens for u in ctx.usages] == [100, 250]
    assert ctx.usages[-1] == Usage(prompt_tokens=250, completion_tokens=2)
    assert ctx.model == "fake-model"


async def test_the_loop_runs_a_call_written_as_text_and_the_user_gets_the_answer(
    llm: OpenAIChat, model: FakeOpenAI
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


async def test_a_model_that_keeps_calling_an_unknown_tool_ends_in_a_line_that_says_so(
    llm: OpenAIChat, model: FakeOpenAI
) -> None:
    model.script(*[ToolCalls([("web_search", {"q": "news"})]) for _ in range(3)])
    ctx = make_ctx()

    with capture_logs() as logs:
        await tool_loop(llm, Echo(), max_steps=3).process(ctx)

    assert ctx.reply == (
        "(The model kept calling tools and gave no answer after 3 steps; it asked for tools "
        "that do not exist: web_search.)"
    )
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert [e["event"] for e in warnings] == ["tool_unknown", "tool_unknown", "tool_loop_no_answer"]
    assert warnings[-1]["unknown"] == ["web_search"]
