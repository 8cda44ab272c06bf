"""Reading a tool's JSON arguments: names, types and ranges checked once, at the tool's edge.

The registry has already made sure the arguments are a JSON object. Each reader here returns a
plain value or raises `ToolError` with a sentence the model can act on ("`k` must be an
integer"); the registry sends that text back as the tool's answer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from bot.errors import ToolError

Args = Mapping[str, Any]


def only(args: Args, known: Collection[str]) -> None:
    """Refuse arguments the tool does not take (a misspelt name would otherwise be ignored)."""
    unknown = sorted(set(args) - set(known))
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise ToolError(f"unknown argument {unknown[0]!r} (this tool takes: {allowed})")


def text(args: Args, name: str, *, max_chars: int, default: str | None = None) -> str:
    """A non-blank string, stripped; `default` when absent (required when there is none)."""
    value = args.get(name, default)
    if value is None:
        raise ToolError(f"`{name}` is required")
    if not isinstance(value, str):
        raise ToolError(f"`{name}` must be a string")
    if not value.strip():
        raise ToolError(f"`{name}` must not be empty")
    if len(value) > max_chars:
        raise ToolError(f"`{name}` is too long (at most {max_chars} characters)")
    return value.strip()


def optional_text(args: Args, name: str, *, max_chars: int) -> str | None:
    return None if args.get(name) is None else text(args, name, max_chars=max_chars)


def integer(args: Args, name: str, *, default: int, low: int, high: int) -> int:
    """An integer clamped to low..high; `default` when absent. 3.0 counts as 3."""
    value = args.get(name, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"`{name}` must be an integer")
    return min(high, max(low, value))


def unit(args: Args, name: str) -> float | None:
    """A number from 0 to 1, or None when absent."""
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"`{name}` must be a number from 0 to 1")
    if not 0.0 <= value <= 1.0:
        raise ToolError(f"`{name}` must be from 0 to 1, not {value}")
    return float(value)


def choice(args: Args, name: str, *, options: Collection[str], default: str) -> str:
    value = args.get(name, default)
    if value not in options:
        raise ToolError(f"`{name}` must be one of: {', '.join(options)}")
    return str(value)


def strings(args: Args, name: str, *, max_items: int, max_chars: int) -> tuple[str, ...] | None:
    """A list of short non-blank strings (stripped, each once), or None when absent."""
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolError(f"`{name}` must be a list of strings")
    found = tuple(dict.fromkeys(v.strip() for v in value if v.strip()))
    if len(found) > max_items:
        raise ToolError(f"`{name}` may hold at most {max_items} entries")
    if any(len(v) > max_chars for v in found):
        raise ToolError(f"each of `{name}` must be at most {max_chars} characters")
    return found
