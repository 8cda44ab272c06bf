"""Tool calls a model wrote as text. A small local model behind a server whose chat template has
no tool syntax (Qwen2.5 1.5B on llama.cpp's server did this) answers a tool call as its message:

    ```json
    {"name": "memory_search", "arguments": {"query": "sister"}}
    ```

or inside `<tool_call>` tags, as Qwen's own template writes them. Such a message is taken as the
calls it names when it is nothing else: one or more JSON objects (or a list of them), bare, in
one fenced block, or each in tags, every one naming a tool that was offered, with an object of
arguments (`arguments` or `parameters`, possibly as a JSON string). Anything else stays text
for the user: words around the JSON, an unknown tool, arguments that are not an object.

While such a message is still being written (streamed), `may_be_calls` says whether it may yet
turn out to be calls, so that it is not shown as it comes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from bot.models import ToolCall

_TAGGED = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FENCED = re.compile(r"^```[\w-]*[ \t]*\n(.*?)\n?```$", re.DOTALL)
_TAG_OPENER = "<tool_call>"
_FENCE = "```"
_JSON_START = ("{", "[")


def may_be_calls(partial: str) -> bool:
    """True when a message that begins with `partial` may still be only tool calls: it
    starts (or may start) with JSON, a `<tool_call>` tag, or a fence whose content starts
    with JSON or has not started yet."""
    body = partial.lstrip()
    if not body or body.startswith(_JSON_START):
        return True
    if _TAG_OPENER.startswith(body[: len(_TAG_OPENER)]):
        return True
    if not _FENCE.startswith(body[:3]):
        return False
    head, newline, content = body.partition("\n")
    if not newline:
        return re.fullmatch(r"`{1,3}[\w-]*[ \t]*", head) is not None
    content = content.lstrip()
    return not content or content.startswith(_JSON_START)


def calls_in_text(text: str, tools: Collection[str]) -> tuple[ToolCall, ...]:
    """The calls `text` is made of, or () when it is (also) something else."""
    body = text.strip()
    if not body or not tools:
        return ()
    if tagged := _TAGGED.findall(body):
        if _TAGGED.sub("", body).strip():
            return ()
        pieces = tagged
    else:
        fenced = _FENCED.match(body)
        pieces = [fenced[1] if fenced else body]
    found: list[ToolCall] = []
    for piece in pieces:
        objects = _objects(piece)
        if not objects:
            return ()
        for value in objects:
            call = _call(value, tools, number=len(found) + 1)
            if call is None:
                return ()
            found.append(call)
    return tuple(found)


def _objects(text: str) -> list[Any]:
    """The JSON values `text` holds one after another (a list is its items); [] when any part
    of it is not JSON."""
    decoder, at, values = json.JSONDecoder(), 0, []
    text = text.strip()
    while at < len(text):
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return []
        values.extend(value if isinstance(value, list) else [value])
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
    return values


def _call(value: Any, tools: Collection[str], *, number: int) -> ToolCall | None:
    if not isinstance(value, dict):
        return None
    if isinstance(function := value.get("function"), dict):  # the API's own shape, as text
        value = function
    name = value.get("name")
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if name not in tools or not isinstance(arguments, dict):
        return None
    return ToolCall(id=f"call_text_{number}", name=str(name), arguments=json.dumps(arguments))
