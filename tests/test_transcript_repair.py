"""Transcript repair on load: what the provider would reject is fixed instead of failing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.app import App
from bot.llm.wire import to_wire
from bot.models import ChatMessage, ToolCall
from bot.storage.sessions import SessionStore
from bot.storage.transcript import MISSING_RESULT, repair
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import FakeOpenAI, Reply, _tool_sequence_problem
from tests.talk import say, session, write_session

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
SUMMARY = ChatMessage(role="system", content="[Conversation summary]\nAnn likes tea.")


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str | None, *calls: str) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        content=text,
        tool_calls=tuple(ToolCall(id=c, name="current_time", arguments="{}") for c in calls),
    )


def result(call_id: str, text: str = "09:30") -> ChatMessage:
    return ChatMessage(role="tool", content=text, tool_call_id=call_id, name="current_time")


def provider_problem(messages: tuple[ChatMessage, ...]) -> str | None:
    """What the fake OpenAI server would answer 400 for, given these messages."""
    return _tool_sequence_problem([to_wire(m) for m in messages])


# ----------------------------------------------------------------------------- the rules


def test_a_well_formed_transcript_is_left_alone() -> None:
    messages = (
        SUMMARY,
        user("what time is it?"),
        assistant(None, "c1", "c2"),
        result("c2"),
        result("c1"),
        assistant("09:30"),
        ChatMessage(role="system", content="a note in the middle"),
        user("thanks"),
        assistant("you're welcome"),
    )
    repaired = repair(messages)
    assert repaired.messages == messages
    assert repaired.fixes == ()


def test_a_tool_result_without_its_call_is_dropped() -> None:
    repaired = repair(
        (
            user("hi"),
            result("ghost"),  # nothing called it
            assistant("hello"),
            user("time?"),
            assistant(None, "c1"),
            result("c1"),
            result("c1"),  # a second answer to the same call
            result("c9"),  # a call of some other message
            assistant("09:30"),
        )
    )
    assert [m.tool_call_id for m in repaired.messages if m.role == "tool"] == ["c1"]
    assert [m.content for m in repaired.messages if m.role != "tool"][:2] == ["hi", "hello"]
    assert len(repaired.fixes) == 3
    assert all("without its call" in fix for fix in repaired.fixes)
    assert provider_problem(repaired.messages) is None


def test_a_call_without_result_gets_a_synthetic_result_right_after_the_calls() -> None:
    repaired = repair(
        (
            user("time?"),
            assistant("Let me look.", "c1", "c2"),
            result("c1"),
            user("hello?"),  # the turn was interrupted before c2 was answered
            assistant(None, "c3"),  # and again, at the very end
        )
    )
    roles = [(m.role, m.tool_call_id, m.content) for m in repaired.messages]
    assert roles == [
        ("user", None, "time?"),
        ("assistant", None, "Let me look."),  # the text and its calls stay
        ("tool", "c1", "09:30"),
        ("tool", "c2", MISSING_RESULT),
        ("user", None, "hello?"),
        ("assistant", None, None),
        ("tool", "c3", MISSING_RESULT),
    ]
    assert repaired.fixes == (
        "added the missing result of tool call c2 (current_time)",
        "added the missing result of tool call c3 (current_time)",
    )
    assert provider_problem(repaired.messages) is None


def test_consecutive_user_and_plain_assistant_messages_are_merged() -> None:
    first = ChatMessage(role="user", content="one", at=NOW)
    later = ChatMessage(role="user", content="two", at=NOW.replace(minute=31))
    repaired = repair(
        (first, later, user("three"), assistant("a"), assistant("b"), assistant(None, "c1"))
    )
    assert [(m.role, m.content) for m in repaired.messages[:3]] == [
        ("user", "one\n\ntwo\n\nthree"),
        ("assistant", "a\n\nb"),
        ("assistant", None),  # a message with tool calls is never merged into
    ]
    assert repaired.messages[0].at == NOW.replace(minute=31)
    assert repaired.fixes.count("merged two consecutive user messages") == 2
    assert repaired.fixes.count("merged two consecutive assistant messages") == 1


def test_messages_of_unknown_shape_are_dropped() -> None:
    repaired = repair(
        (
            user("hi"),
            ChatMessage(role="user", content=None),
            ChatMessage(role="tool", content="orphan", tool_call_id=None),
            ChatMessage(role="user", content="x", tool_calls=(ToolCall("c1", "t", "{}"),)),
            ChatMessage(role="system", content=None),
            assistant("hello"),
        )
    )
    assert [(m.role, m.content) for m in repaired.messages] == [
        ("user", "hi"),
        ("assistant", "hello"),
    ]
    assert repaired.fixes == (
        "dropped a user message without text",
        "dropped a tool result without its call id or text",
        "dropped a user message with tool calls",
        "dropped a system message without text",
    )


def test_an_empty_assistant_answer_keeps_its_place_with_empty_text() -> None:
    repaired = repair((user("hi"), assistant(None), user("hello?")))
    assert [(m.role, m.content) for m in repaired.messages] == [
        ("user", "hi"),
        ("assistant", ""),
        ("user", "hello?"),
    ]


def test_a_dropped_message_can_leave_neighbours_to_merge() -> None:
    repaired = repair((user("one"), result("ghost"), user("two")))
    assert [(m.role, m.content) for m in repaired.messages] == [("user", "one\n\ntwo")]


# ----------------------------------------------------------------------------- on load


def raw(role: str, content: str | None, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def raw_call(call_id: str) -> dict[str, str]:
    return {"id": call_id, "name": "current_time", "arguments": "{}"}


BROKEN: list[Any] = [
    raw("user", "what time is it?"),
    raw("assistant", None, tool_calls=[raw_call("call_77")]),  # crashed before the result
    raw("user", "hello?"),
    raw("user", "are you there?"),
    raw("tool", "stray", tool_call_id="call_99", name="current_time"),
    raw("function", "an old role"),
    "not a message",
    raw("assistant", "Sorry, here now."),
]


async def test_load_repairs_and_logs_each_fix_without_moving_the_file(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    workspace.ensure()
    path = write_session(tmp_path, BROKEN, updated_at=NOW)
    with capture_logs() as logs:
        loaded = await SessionStore(workspace, now=lambda: NOW).load("telegram:1001")

    assert [(m.role, m.content) for m in loaded.messages] == [
        ("user", "what time is it?"),
        ("assistant", None),
        ("tool", MISSING_RESULT),
        ("user", "hello?\n\nare you there?"),
        ("assistant", "Sorry, here now."),
    ]
    fixes = [e["fix"] for e in logs if e["event"] == "session_repaired"]
    assert len(fixes) == 5  # two unreadable, one stray result, one missing result, one merge
    assert sum("unreadable" in fix for fix in fixes) == 2
    assert path.exists() and not list(path.parent.glob("*.corrupt-*"))


@pytest.mark.parametrize("where", ["start", "middle"])
async def test_the_next_request_after_a_broken_session_is_well_formed(
    app: App, fake_openai: FakeOpenAI, workspace: Path, where: str
) -> None:
    messages = list(BROKEN)
    summary = raw("system", "[Conversation summary]\nAnn likes tea.")
    messages.insert(0 if where == "start" else 2, summary)  # 2: right after the open call
    write_session(workspace, messages, updated_at=NOW)
    fake_openai.script(Reply("It is 09:30."))  # the fake answers 400 to a malformed sequence

    assert await say(app, "so, the time?") == ["It is 09:30."]

    sent = fake_openai.last_request["messages"]
    assert _tool_sequence_problem(sent) is None
    assert {"role": "tool", "content": MISSING_RESULT, "tool_call_id": "call_77"} in sent
    assert summary in sent  # the summary (a system message) stays where it was
    assert sent[-1] == {"role": "user", "content": "so, the time?"}
    saved = [m["content"] for m in session(workspace)["messages"]]
    assert saved.count("hello?\n\nare you there?") == 1  # the repaired session was saved
    assert "stray" not in json.dumps(saved)
