"""Tool calls a small model wrote as text (`bot.llm.text_calls`); the tool loop running one is
in `test_tool_loop`."""

from __future__ import annotations

import json

import pytest

from bot.llm.text_calls import calls_in_text, may_be_calls

TOOLS = {"echo", "memory_search"}


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


@pytest.mark.parametrize(
    "partial",
    [
        "",
        "  ",
        '{"name": "ec',
        "[{",
        "<tool",
        "<tool_call>\n{",
        "`",
        "```json",
        "```\n",
        "```json\n{",
    ],
)
def test_a_beginning_that_may_still_be_a_call_is_held_back(partial: str) -> None:
    assert may_be_calls(partial)


@pytest.mark.parametrize(
    "partial", ["Hello", "`code` first", "```python\nprint(1)", "<b>bold", "- a list"]
)
def test_a_beginning_that_cannot_be_a_call_is_text(partial: str) -> None:
    assert not may_be_calls(partial)


def test_every_beginning_of_a_call_written_as_text_is_held_back() -> None:
    call = '```json\n{"name": "echo", "arguments": {"text": "hi"}}\n```'
    assert calls_in_text(call, TOOLS)
    assert all(may_be_calls(call[:end]) for end in range(len(call) + 1))
