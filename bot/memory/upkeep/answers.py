"""Reading the consolidation model's JSON answer, however it arrives (three tiers).

1. Strip markdown fences and parse the whole text.
2. Else parse the first balanced `{…}` block that is a JSON object (strings respected).
3. Else pick out the `"history_entry"` / `"memory_update"` string values one by one.

Real small models answer loosely, so the values are read loosely too, and always end as plain
text: a list is its items one a line (as `- item` lines for `memory_update`), an object its keys
as `## key` headings over their values, and fence lines (```` ```markdown ````) inside a value
are dropped — a fence never reaches MEMORY.md or HISTORY; nor does a line of the request echoed
back (a heading, `## Current Long-term Memory`, the empty memory's `(empty)`, as Qwen2.5 1.5B
did, or a forgotten message's mark), nor a line of only JSON
punctuation (`{`, `- }`: what is left of an answer cut short). A number, `null` or an empty
value is missing, so a malformed answer can never blank out `MEMORY.md`. `removed` (optional)
lists the MEMORY.md lines the model means to drop, `replaced` (optional) those a newer fact of
the update replaces (kept as history, marked superseded); consolidation keeps any other line it
leaves out.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bot.memory.lines import bare, bullet_of
from bot.memory.upkeep.requests import PROMPT_ECHOES

FIELDS = ("history_entry", "memory_update")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_FENCE_LINE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
_PUNCTUATION_LINE = re.compile(r"^[\s\-*+]*[{}\[\],:\"]+[\s,]*$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}


@dataclass(frozen=True)
class ConsolidationResult:
    history_entry: str | None
    memory_update: str | None
    removed: tuple[str, ...] = ()  # MEMORY.md lines the model says it drops on purpose
    replaced: tuple[str, ...] = ()  # MEMORY.md lines a newer fact of the update replaces

    @property
    def is_empty(self) -> bool:
        return self.history_entry is None and self.memory_update is None


def parse_consolidation(text: str) -> ConsolidationResult:
    """The two fields from a model answer; both None when it holds no usable JSON."""
    whole = _whole(text)
    for document in itertools.chain([whole] if whole is not None else [], _objects(text)):
        if not (result := _result(document)).is_empty:
            return result
    return ConsolidationResult(
        history_entry=_field(text, "history_entry"), memory_update=_field(text, "memory_update")
    )


def _whole(text: str) -> dict[str, Any] | None:
    fenced = _FENCE.search(text)
    return _as_object((fenced[1] if fenced else text).strip())


def _as_object(candidate: str) -> dict[str, Any] | None:
    try:
        value = json.loads(candidate, strict=False)  # raw newlines inside strings are common
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _objects(text: str) -> Iterator[dict[str, Any]]:
    """Every balanced `{…}` block that parses as a JSON object, in order."""
    start = text.find("{")
    while start != -1:
        end = _block_end(text, start)
        if end is not None and (found := _as_object(text[start:end])) is not None:
            yield found
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)


def _block_end(text: str, start: int) -> int | None:
    """Index just past the `}` that closes the `{` at `start`, by depth; strings skipped."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if escaped:
            escaped = False
        elif in_string:
            escaped = char == "\\"
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in "{}":
            depth += 1 if char == "{" else -1
            if depth == 0:
                return index + 1
    return None


def _result(document: dict[str, Any]) -> ConsolidationResult:
    entry = _text(document.get("history_entry"), bullets=False)
    update = _text(document.get("memory_update"), bullets=True)
    removed = _text(document.get("removed"), bullets=False) or ""
    replaced = _text(document.get("replaced"), bullets=False) or ""
    return ConsolidationResult(
        entry,
        update,
        tuple(removed.splitlines()) if update else (),
        tuple(replaced.splitlines()) if update else (),
    )


def _text(value: object, *, bullets: bool) -> str | None:
    """`value` as plain text (see the module's docstring), or None when it holds none."""
    return _unfenced(_lines(value, bullets=bullets))


def _lines(value: object, *, bullets: bool) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        items = (_lines(item, bullets=bullets).strip() for item in value)
        return "\n".join(_bullet(item) if bullets else item for item in items if item)
    if isinstance(value, dict):
        parts = [f"## {key}\n{_lines(inner, bullets=True).strip()}" for key, inner in value.items()]
        return "\n\n".join(parts)
    return ""


def _bullet(item: str) -> str:
    return item if item.startswith("#") or bullet_of(item) else f"- {item}"


def _unfenced(text: str) -> str | None:
    kept = [
        line
        for line in text.splitlines()
        if not _FENCE_LINE.match(line)
        and not _PUNCTUATION_LINE.match(line)
        and bare(line).casefold() not in PROMPT_ECHOES
    ]
    return "\n".join(kept).strip() or None


def _field(text: str, name: str) -> str | None:
    """A field's string value found by pattern (a complete, closed string only)."""
    match = re.search(rf'"{name}"\s*:\s*"((?:[^"\\]|\\.)*)"', text, re.DOTALL)
    if match is None:
        return None
    return _unfenced(_unescape(match[1]))


def _unescape(raw: str) -> str:
    try:
        value = json.loads(f'"{raw}"', strict=False)
    except ValueError:
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[0]), raw, flags=re.DOTALL)
    return str(value)
