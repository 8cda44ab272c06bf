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
from bot.models import Inbound, MemoryScope, ToolCall, ToolSpec

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ToolContext:
    """What a tool may know about the turn that called it."""

    session_key: str
    scope: MemoryScope
    forgotten: list[str] = field(default_factory=list)  # memory_forget adds what it forgot
    inbound: Inbound | None = None  # the message the turn answers (who asked, in which chat)


class Tool(Protocol):
    spec: ToolSpec

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str: ...


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools = {tool.spec.name: tool for tool in tools}

    def add(self, tool: Tool) -> None:
        self._tools[tool.spec.name] = tool

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
