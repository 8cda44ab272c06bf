"""`Tool` protocol and `ToolRegistry`: the tool boundary, where a failure becomes text.

A tool that raises, an unknown tool name or arguments that are not a JSON object all go back to
the model as a short error string; the turn goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from bot.errors import ToolError
from bot.memory.provenance import brief
from bot.memory.trust import TurnOrigin
from bot.models import Inbound, MemoryScope, Recalled, StoredLine, ToolCall, ToolSpec

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ToolContext:
    """What a tool may know about the turn that called it."""

    session_key: str
    scope: MemoryScope
    forgotten: list[str] = field(default_factory=list)  # memory_forget adds what it forgot
    stored: list[StoredLine] = field(default_factory=list)  # memory lines written
    inbound: Inbound | None = None  # the message the turn answers (who asked, in which chat)
    origin: TurnOrigin | None = None  # who wrote the message, and whose words the turn carried
    recalled: list[Recalled] = field(default_factory=list)  # memory tools add others' words


QUOTED_REFUSAL = (
    "this turn carried {what}, not only the user's own words: memory is not written from it. "
    "A <memory> tag is kept as a quote with its source, for the owner to keep or not."
)
RECALLED_REFUSAL = (
    "that text draws on other people's words memory brought back ({source}), not on the "
    "user's own: memory is not written from it. A <memory> tag is kept as a quote with its "
    "source, for the owner to keep or not."
)
_WHAT = {
    "forwarded": "a forwarded message",
    "document": "a document's text",
    "group": "other group members' messages",
    "tool": "a tool's output or quoted material",
}


def refuse_quoted(ctx: ToolContext, text: str = "") -> None:
    """`ToolError` when the turn carried other people's words, or `text` draws on others'
    words memory brought back in it (`bot.memory.trust`): the memory tools write nothing of
    them."""
    if ctx.origin is None:
        return
    if ctx.origin.quoted is not None:
        what = _WHAT.get(ctx.origin.quoted, "other people's words")
        raise ToolError(QUOTED_REFUSAL.format(what=what))
    origin = ctx.origin.with_recalled(ctx.recalled)
    if not origin.trusts(text):
        raise ToolError(RECALLED_REFUSAL.format(source=brief(origin.source_of(text))))


class Tool(Protocol):
    spec: ToolSpec

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str: ...


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools = {tool.spec.name: tool for tool in tools}

    def add(self, tool: Tool) -> None:
        self._tools[tool.spec.name] = tool

    def get(self, name: str) -> Tool | None:
        """The tool offered as `name` (the memory page uses `memory_search`'s)."""
        return self._tools.get(name)

    def without(self, *names: str) -> ToolRegistry:
        """The same tools but `names`."""
        return ToolRegistry(t for n, t in self._tools.items() if n not in names)

    @property
    def specs(self) -> Sequence[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    async def call(self, call: ToolCall, ctx: ToolContext) -> str:
        tool = self._tools.get(call.name)
        if tool is None:
            return f"error: no tool named {call.name!r}"
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"error: arguments are not valid JSON ({exc.msg})"
        if not isinstance(args, dict):
            return "error: arguments must be a JSON object"
        try:
            return await tool.run(args, ctx)
        except ToolError as exc:
            return f"error: {exc}"
        except Exception:
            log.warning("tool_failed", tool=call.name, exc_info=True)
            return f"error: the tool {call.name!r} failed"
