"""Transcript repair: a loaded session's messages made acceptable to the provider.

What the provider would reject is fixed instead of failing the turn, one note per fix:

- a message of unknown shape is dropped: a user or system message without text, a tool result
  without its call id or text, tool calls on a message that is not the assistant's;
- an assistant message with neither text nor tool calls gets empty text (it was an empty answer);
- a tool result whose call is not in the preceding assistant message is dropped (so is a second
  result for the same call);
- an assistant tool call without a result gets a synthetic one, right after the other results:
  `MISSING_RESULT`. Calls are never dropped, even beside text: the model then sees what it tried
  and that the turn did not finish, and the transcript keeps what was said;
- consecutive user messages, and consecutive plain assistant messages (no tool calls), are
  merged, their texts joined by a blank line;
- system messages stay where they are: the `[Conversation summary]` leads the session, and one
  in the middle is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.models import ChatMessage, ToolCall

MISSING_RESULT = "error: no result was recorded (the turn was interrupted)"


@dataclass(frozen=True)
class Repaired:
    messages: tuple[ChatMessage, ...]
    fixes: tuple[str, ...]  # one line per fix, for the log; empty when nothing was wrong


def repair(messages: Sequence[ChatMessage]) -> Repaired:
    """The messages with every fix applied (see the module docstring), and what was fixed."""
    fixes: list[str] = []
    shaped = _known_shapes(messages, fixes)
    paired = _paired(shaped, fixes)
    merged = _merged(paired, fixes)
    return Repaired(messages=tuple(merged), fixes=tuple(fixes))


def _known_shapes(messages: Sequence[ChatMessage], fixes: list[str]) -> list[ChatMessage]:
    kept: list[ChatMessage] = []
    for message in messages:
        problem = shape_problem(message)
        if problem is not None:
            fixes.append(f"dropped {problem}")
        elif message.role == "assistant" and message.content is None and not message.tool_calls:
            fixes.append("gave an empty assistant message empty text")
            kept.append(replace(message, content=""))
        else:
            kept.append(message)
    return kept


def shape_problem(message: ChatMessage) -> str | None:
    """What makes the message unsendable as it stands, or None."""
    if message.tool_calls and message.role != "assistant":
        return f"a {message.role} message with tool calls"
    if message.role == "tool" and (not message.tool_call_id or message.content is None):
        return "a tool result without its call id or text"
    if message.role in ("user", "system") and message.content is None:
        return f"a {message.role} message without text"
    return None


def _paired(messages: Sequence[ChatMessage], fixes: list[str]) -> list[ChatMessage]:
    """Every tool result follows its call; every call has a result."""
    paired: list[ChatMessage] = []
    waiting: list[ToolCall] = []  # calls of the last assistant message not yet answered
    for message in messages:
        if message.role != "tool":
            paired += _missing_results(waiting, fixes)
            waiting = list(message.tool_calls)
            paired.append(message)
        elif (call := _answered(waiting, message.tool_call_id)) is not None:
            waiting.remove(call)
            paired.append(message)
        else:
            fixes.append(f"dropped a tool result without its call ({message.tool_call_id})")
    paired += _missing_results(waiting, fixes)
    return paired


def _answered(waiting: Sequence[ToolCall], call_id: str | None) -> ToolCall | None:
    return next((call for call in waiting if call.id == call_id), None)


def _missing_results(waiting: Sequence[ToolCall], fixes: list[str]) -> list[ChatMessage]:
    for call in waiting:
        fixes.append(f"added the missing result of tool call {call.id} ({call.name})")
    return [
        ChatMessage(role="tool", content=MISSING_RESULT, tool_call_id=call.id, name=call.name)
        for call in waiting
    ]


def _merged(messages: Sequence[ChatMessage], fixes: list[str]) -> list[ChatMessage]:
    merged: list[ChatMessage] = []
    for message in messages:
        if merged and _mergeable(merged[-1], message):
            fixes.append(f"merged two consecutive {message.role} messages")
            merged[-1] = _joined(merged[-1], message)
        else:
            merged.append(message)
    return merged


def _mergeable(first: ChatMessage, second: ChatMessage) -> bool:
    plain = not first.tool_calls and not second.tool_calls
    return plain and first.role == second.role and first.role in ("user", "assistant")


def _joined(first: ChatMessage, second: ChatMessage) -> ChatMessage:
    texts = [text for text in (first.content, second.content) if text]
    return replace(first, content="\n\n".join(texts), at=second.at or first.at)
