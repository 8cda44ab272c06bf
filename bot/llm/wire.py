"""A request in the JSON of OpenAI's chat API: a message (its images as data URLs) and a tool
as a request offers it, without the schema words the tools check themselves. The client sends
them (`bot.llm.openai_chat`); the meter and `/context` count them as sent."""

from __future__ import annotations

import base64
from typing import Any

from bot.models import ChatMessage, Image, ToolSpec


def to_wire(message: ChatMessage) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.images:
        wire["content"] = _parts(message)
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.role == "tool":
        wire["tool_call_id"] = message.tool_call_id
    return wire


def _parts(message: ChatMessage) -> list[dict[str, Any]]:
    """A message that shows images: its text, then each image as a data URL."""
    text = [{"type": "text", "text": message.content}] if message.content else []
    return text + [
        {"type": "image_url", "image_url": {"url": data_url(image)}} for image in message.images
    ]


def data_url(image: Image) -> str:
    return f"data:{image.mime_type};base64,{base64.b64encode(image.data).decode('ascii')}"


# Schema words the tools check themselves (`bot.tools.arguments`, whose errors tell the model
# the limit it broke): left out of each request, where they cost ~15% of the tools' tokens.
_CHECKED_BY_TOOLS = frozenset(
    {"minLength", "maxLength", "minimum", "maximum", "maxItems", "additionalProperties"}
)


def tool_to_wire(tool: ToolSpec) -> dict[str, Any]:
    """The tool as a request offers it: made once per `ToolSpec` (a tool's is a constant, sent
    with every request); the caller must not change it."""
    kept = _WIRED.get(id(tool))
    if kept is not None and kept[0] is tool:
        return kept[1]
    wire = {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": _offered(tool.parameters),
        },
    }
    if len(_WIRED) >= _WIRED_TOOLS:
        _WIRED.clear()
    _WIRED[id(tool)] = (tool, wire)  # the spec kept with it: its id is not reused meanwhile
    return wire


_WIRED: dict[int, tuple[ToolSpec, dict[str, Any]]] = {}
_WIRED_TOOLS = 256


def _offered(schema: Any) -> Any:
    """A JSON schema without `_CHECKED_BY_TOOLS` (a property named so keeps its name)."""
    if isinstance(schema, list):
        return [_offered(value) for value in schema]
    if not isinstance(schema, dict):
        return schema
    offered = {k: _offered(v) for k, v in schema.items() if k not in _CHECKED_BY_TOOLS}
    if isinstance(properties := schema.get("properties"), dict):
        offered["properties"] = {name: _offered(v) for name, v in properties.items()}
    return offered
