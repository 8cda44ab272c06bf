"""`memory_edit`: the model corrects long-term memory — one line of MEMORY.md or of this chat's
own memory, found by its text, replaced or deleted.

It goes through the memory writer, under the same lock as every other change, so a person's hand
edit is never overwritten. Privacy (`bot.memory.scopes`): "memory" is the turn's own scope (global
only in an owner's private chat), "chat" this chat's own memory; nothing else is reachable. No line
or several lines holding the text change nothing: the answer says so and lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from textwrap import shorten
from typing import Any, Protocol

from bot.errors import NotTextError, ToolError
from bot.memory.lines import bare
from bot.memory.notes.long_term import LineEdit
from bot.models import MemoryScope, Provenance, StoredLine, ToolSpec
from bot.tools import arguments
from bot.tools.registry import ToolContext, refuse_quoted

MAX_CHARS = 2000
SHOWN = 5


class LineEditor(Protocol):
    async def edit_line(
        self, scope: MemoryScope, old: str, new: str, *, supersedes: Provenance | None = None
    ) -> LineEdit: ...


@dataclass(eq=False)
class MemoryEdit:
    spec = ToolSpec(
        name="memory_edit",
        description=(
            "Correct long-term memory: replace one line of MEMORY.md (where=memory) or of this "
            "chat's memory (where=chat), found by its text, with new text; leave new out (or "
            "empty) to delete the line. The text must match exactly one line."
        ),
        parameters={
            "type": "object",
            "properties": {
                "old": {
                    "type": "string",
                    "description": "The line's text, or a part of it found in no other line.",
                    "minLength": 3,
                    "maxLength": MAX_CHARS,
                },
                "new": {
                    "type": "string",
                    "description": "What the line should say; empty or absent to delete it.",
                    "maxLength": MAX_CHARS,
                },
                "where": {
                    "type": "string",
                    "enum": ["memory", "chat"],
                    "description": "Default memory.",
                },
                "supersedes": {
                    "type": "boolean",
                    "description": (
                        "True when new is a newer value that replaces the old one (someone "
                        "moved, changed jobs, a date changed): the old line is kept as "
                        "history, marked superseded. Default false: a plain fix."
                    ),
                },
            },
            "required": ["old"],
            "additionalProperties": False,
        },
    )

    memory: LineEditor

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        arguments.only(args, ("old", "new", "where", "supersedes"))
        old = arguments.text(args, "old", max_chars=MAX_CHARS)
        new = _new(args)
        where = arguments.choice(args, "where", options=("memory", "chat"), default="memory")
        scope = ctx.scope if where == "memory" else MemoryScope(chat_key=ctx.session_key)
        name = "MEMORY.md" if where == "memory" else "this chat's memory"
        refuse_quoted(ctx, new)
        try:
            edit = await self.memory.edit_line(scope, old, new, supersedes=_newer(args, ctx))
        except NotTextError as exc:
            raise ToolError(str(exc)) from exc  # why it was left alone, and what to fix
        if edit.after is not None and edit.before is not None:  # a receipt after the reply
            ctx.stored.append(stored_line(scope, edit, superseded=args.get("supersedes") is True))
        return _answer(edit, name, old)


def stored_line(scope: MemoryScope, edit: LineEdit, *, superseded: bool) -> StoredLine:
    """What the edit changed, for its receipt's Undo: the old line marked, or replaced."""
    after, before = bare(edit.after or ""), edit.before or ""
    if superseded:
        return StoredLine(scope, after, superseded=(before,))
    return StoredLine(scope, after, replaced=before)


def _newer(args: dict[str, Any], ctx: ToolContext) -> Provenance | None:
    """The new value's provenance when it supersedes the old one: the model's inference."""
    value = args.get("supersedes", False)
    if not isinstance(value, bool):
        raise ToolError("`supersedes` is true or false")
    if not value:
        return None
    at = ctx.origin.said.at if ctx.origin is not None else datetime.now(UTC)
    return Provenance(by="model", chat=ctx.session_key, at=at, via="inference")


def _new(args: dict[str, Any]) -> str:
    value = args.get("new")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ToolError("`new` is the line's new text, a string")
    if len(value) > MAX_CHARS or "\n" in value.strip():
        raise ToolError(f"`new` is one line of at most {MAX_CHARS} characters")
    return value


def _answer(edit: LineEdit, name: str, old: str) -> str:
    if edit.before is None and not edit.matches:
        raise ToolError(f"no line of {name} holds {old!r}; nothing was changed")
    if edit.before is None:
        lines = "; ".join(
            shorten(line.strip(), 120, placeholder=" …") for line in edit.matches[:SHOWN]
        )
        raise ToolError(
            f"{len(edit.matches)} lines of {name} hold {old!r} ({lines}); give more of the "
            "line's text so that it matches one; nothing was changed"
        )
    if edit.after is None:
        return f"deleted from {name}: {edit.before.strip()}"
    return f"changed in {name}: {edit.before.strip()} → {edit.after.strip()}"
