"""What a request is made of, for a person to see: /context and `python -m bot prompt`.

The tool loop keeps the last request it sent in each chat (`LastRequests`): a reference to what
the turn built anyway, nothing copied or counted. Counting happens only when someone asks
(`breakdown`): each named part (`PromptPart`, named by system 20: persona, instructions, each
section of `# Memory`, the message's recalled items, `# Relevant Memory`, the time), the tools'
definitions, the conversation, this turn's tool calls and results, the user's message, and the
rest (roles, separators, headers) — which add up to the request's count, against the window.
`summary` writes the table; `full_text` the whole request, message by message, tools last.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from bot.llm.meter import tool_tokens
from bot.llm.tokens import TokenCounter
from bot.llm.wire import tool_to_wire
from bot.models import ChatMessage, PromptPart, ToolSpec

RULE = "=" * 24


@dataclass(frozen=True)
class SentRequest:
    """One request to the model, as sent, with the pieces it was built from."""

    messages: tuple[ChatMessage, ...]  # the request as sent
    tools: tuple[ToolSpec, ...]  # the tools offered with it
    parts: tuple[PromptPart, ...]  # system 20's named pieces
    conversation: tuple[ChatMessage, ...]  # the session's messages
    message: ChatMessage  # the user's message, as written
    at: datetime  # when it was sent (or, for a preview, built)
    steps: tuple[ChatMessage, ...] = ()  # this turn's tool calls and results before it


class LastRequests:
    """The last request sent in each chat, by reference (this process's, since it started)."""

    def __init__(self) -> None:
        self._last: dict[str, SentRequest] = {}

    def record(self, session_key: str, request: SentRequest) -> None:
        self._last[session_key] = request

    def last(self, session_key: str) -> SentRequest | None:
        return self._last.get(session_key)


@dataclass(frozen=True)
class Row:
    label: str
    tokens: int
    within: bool = False  # a section of the row above it (not added to the total again)


@dataclass(frozen=True)
class Breakdown:
    rows: tuple[Row, ...]
    total: int  # the request as counted: its messages and the tools
    window: int


def breakdown(request: SentRequest, tokens: TokenCounter, *, window: int) -> Breakdown:
    """Each part of `request` counted (offline, as the meter counts), and the total."""
    parts = [Row(p.label, tokens.count(p.text), within=bool(p.within)) for p in request.parts]
    rest = [
        Row(f"tools ({len(request.tools)})", tool_tokens(tokens, request.tools)),
        Row(_messages("conversation", request.conversation), _count(tokens, request.conversation)),
        Row(
            _messages("this turn's tool calls and results", request.steps),
            _count(tokens, request.steps),
        ),
        Row("the user's message", tokens.count(request.message.content or "")),
    ]
    total = tokens.count_messages(request.messages) + rest[0].tokens
    counted = sum(row.tokens for row in [*parts, *rest] if not row.within)
    framing = Row("roles, separators and headers", max(0, total - counted))
    rows = [*parts, *(row for row in rest if row.tokens), framing]
    return Breakdown(rows=tuple(rows), total=total, window=window)


def summary(found: Breakdown, *, title: str) -> str:
    """The table: one line a part, sections indented under their part, the total last."""
    width = max(len(row.label) + (2 if row.within else 0) for row in found.rows)
    lines = [title, ""]
    for row in found.rows:
        label = f"  {row.label}" if row.within else row.label
        lines.append(f"{label:<{width}}  {row.tokens:>7,}")
    lines.append(f"{'total':<{width}}  {found.total:>7,}  counted offline")
    return "\n".join(lines)


def full_text(request: SentRequest) -> str:
    """The whole request as text: each message under its role, then the tools' JSON."""
    blocks = [_message_text(message) for message in request.messages]
    if request.tools:
        wire = json.dumps([tool_to_wire(t) for t in request.tools], indent=2, ensure_ascii=False)
        blocks.append(f"{RULE} tools ({len(request.tools)}) {RULE}\n{wire}")
    return "\n\n".join(blocks) + "\n"


def _message_text(message: ChatMessage) -> str:
    role = f"{message.role} ({message.name})" if message.name else message.role
    body = [message.content or ""]
    body += [f"→ {call.name}({call.arguments})" for call in message.tool_calls]
    return f"{RULE} {role} {RULE}\n" + "\n".join(text for text in body if text)


def _messages(label: str, messages: tuple[ChatMessage, ...]) -> str:
    return f"{label} ({len(messages)} message{'' if len(messages) == 1 else 's'})"


def _count(tokens: TokenCounter, messages: tuple[ChatMessage, ...]) -> int:
    return tokens.count_messages(messages) if messages else 0
