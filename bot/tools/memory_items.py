"""`memory_add`, `memory_update`, `memory_promote`, `memory_forget`: the model's own changes to
structured memory items, through the memory writer; `memory_forget`
forgets a text everywhere, as /forget does.

Every call acts in the calling chat's scope only: an id from another chat's items is answered
"no item with that id here", exactly like an id that never existed. Each answer names the item
id, so the model can refer to the item later.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Protocol

import structlog

from bot.errors import ToolError
from bot.memory.forgetting import FORGET_MIN_CHARS, Forgotten, forget_receipt
from bot.models import MemoryItem, MemoryLayer, MemoryScope, Provenance, ToolSpec
from bot.tools import arguments
from bot.tools.registry import ToolContext, refuse_quoted

MAX_TEXT_CHARS = 2000
MAX_TAGS = 10
TAG_CHARS = 40
TYPES = ("fact", "preference", "constraint", "decision", "todo", "command", "error", "error_fix")
LAYERS = tuple(layer.value for layer in MemoryLayer)
NOT_HERE = "no item with that id here"
log = structlog.get_logger(__name__)
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ItemChanges(Protocol):
    """What the tools need of the memory writer (`MemoryWriter`: the item, then the index, so
    a memory_search later in the same turn finds it); each change returns None for an id the
    scope does not hold."""

    async def add_item(
        self,
        scope: MemoryScope,
        layer: MemoryLayer,
        text: str,
        *,
        type: str = ...,
        tags: Sequence[str] = ...,
        origin: Provenance | None = ...,
    ) -> MemoryItem: ...

    async def update_item(
        self,
        scope: MemoryScope,
        item_id: str,
        *,
        text: str | None = ...,
        confidence: float | None = ...,
        salience: float | None = ...,
        tags: Sequence[str] | None = ...,
    ) -> MemoryItem | None: ...

    async def promote_item(self, scope: MemoryScope, item_id: str) -> MemoryItem | None: ...


class ItemTool:
    """What the three item tools share: the writer."""

    def __init__(self, memory: ItemChanges) -> None:
        self.memory = memory


def describe(item: MemoryItem) -> str:
    """`s-1a2b3c4d5e (semantic fact, confidence 0.70, salience 0.60, tags: a, b): text`"""
    tags = f", tags: {', '.join(item.tags)}" if item.tags else ""
    status = "" if item.status == "active" else f", {item.status}"
    return (
        f"{item.id} ({item.layer.value} {item.type}, confidence {item.confidence:.2f}, "
        f"salience {item.salience:.2f}{tags}{status}): {item.text}"
    )


def item_id(args: arguments.Args) -> str:
    value = arguments.text(args, "id", max_chars=64)
    if not _ID.match(value):
        raise ToolError("`id` is an item id such as s-1a2b3c4d5e, as memory tools return it")
    return value


def _id_property(description: str) -> dict[str, object]:
    """An item's id, as `item_id` reads it."""
    return {"type": "string", "description": description, "minLength": 1}


def _id_schema(description: str) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {"id": _id_property(description)},
        "required": ["id"],
        "additionalProperties": False,
    }


def _text_property(description: str, *, min_chars: int = 1) -> dict[str, object]:
    """An item's text, as `arguments.optional_text(…, max_chars=MAX_TEXT_CHARS)` reads it."""
    return {
        "type": "string",
        "description": description,
        "minLength": min_chars,
        "maxLength": MAX_TEXT_CHARS,
    }


def _unit_property(description: str) -> dict[str, object]:
    """A share from 0 to 1, as `arguments.unit` reads it."""
    return {"type": "number", "description": description, "minimum": 0, "maximum": 1}


_TAGS_SCHEMA = {
    "type": "array",
    "description": f"Short labels (at most {MAX_TAGS}).",
    "items": {"type": "string", "maxLength": TAG_CHARS},
    "maxItems": MAX_TAGS,
}


def _tags(args: arguments.Args) -> tuple[str, ...] | None:
    return arguments.strings(args, "tags", max_items=MAX_TAGS, max_chars=TAG_CHARS)


class MemoryAdd(ItemTool):
    spec = ToolSpec(
        name="memory_add",
        description=(
            "Store one self-contained memory item (a fact, preference, decision, todo, command "
            "…) in this chat's structured memory. Returns its id. Storing the same text again "
            "reinforces the existing item."
        ),
        parameters={
            "type": "object",
            "properties": {
                "text": _text_property("The item, one short self-contained statement."),
                "layer": {
                    "type": "string",
                    "enum": list(LAYERS),
                    "description": "semantic: durable facts (default); episodic: events; "
                    "procedural: commands, errors and fixes.",
                },
                "type": {"type": "string", "enum": list(TYPES), "description": "Default fact."},
                "tags": _TAGS_SCHEMA,
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        arguments.only(args, ("text", "layer", "type", "tags"))
        text = arguments.text(args, "text", max_chars=MAX_TEXT_CHARS)
        layer = arguments.choice(args, "layer", options=LAYERS, default="semantic")
        kind = arguments.choice(args, "type", options=TYPES, default="fact")
        tags = _tags(args) or ()
        refuse_quoted(ctx, text)
        said = ctx.origin.said if ctx.origin is not None else None
        item = await self.memory.add_item(
            ctx.scope, MemoryLayer(layer), text, type=kind, tags=tags, origin=said
        )
        verb = "stored" if item.created_at == item.updated_at else "reinforced"
        return f"{verb} {describe(item)}"


class MemoryUpdate(ItemTool):
    spec = ToolSpec(
        name="memory_update",
        description=(
            "Change a memory item of this chat by its id: its text, confidence, salience or "
            "tags (give at least one)."
        ),
        parameters={
            "type": "object",
            "properties": {
                "id": _id_property("The item's id."),
                "text": _text_property("The new text."),
                "confidence": _unit_property("How sure it is true, 0 to 1."),
                "salience": _unit_property("How much it matters, 0 to 1."),
                "tags": {**_TAGS_SCHEMA, "description": "Replaces the item's tags."},
            },
            "required": ["id"],
            "additionalProperties": False,
        },
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        arguments.only(args, ("id", "text", "confidence", "salience", "tags"))
        target = item_id(args)
        text = arguments.optional_text(args, "text", max_chars=MAX_TEXT_CHARS)
        confidence = arguments.unit(args, "confidence")
        salience = arguments.unit(args, "salience")
        tags = _tags(args)
        if text is None and confidence is None and salience is None and tags is None:
            raise ToolError("nothing to change: give text, confidence, salience or tags")
        refuse_quoted(ctx, text or "")
        item = await self.memory.update_item(
            ctx.scope, target, text=text, confidence=confidence, salience=salience, tags=tags
        )
        return NOT_HERE if item is None else f"updated {describe(item)}"


class MemoryPromote(ItemTool):
    spec = ToolSpec(
        name="memory_promote",
        description=(
            "Copy an episodic memory item of this chat to durable semantic memory. Returns the "
            "new semantic item's id."
        ),
        parameters=_id_schema("The episodic item's id (it starts with e)."),
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        arguments.only(args, ("id",))
        target = item_id(args)
        if not target.startswith("e"):
            raise ToolError("only episodic items (ids starting with e) can be promoted")
        refuse_quoted(ctx)
        item = await self.memory.promote_item(ctx.scope, target)
        if item is None:
            return f"{NOT_HERE} (or it was forgotten)"
        return f"promoted {target} to {describe(item)}"


class Forgetter(Protocol):
    """What `memory_forget` needs: the item's text, and forgetting it everywhere (the same
    path as /forget: `MemoryWriter.forget`)."""

    def find(self, scope: MemoryScope, item_id: str) -> MemoryItem | None: ...

    async def forget(self, scope: MemoryScope, session_key: str, needle: str) -> Forgotten: ...


@dataclass(eq=False)
class MemoryForget:
    spec = ToolSpec(
        name="memory_forget",
        description=(
            "Forget something everywhere memory keeps it — MEMORY.md, notes, history, items and "
            "past conversations — given an item id or the text itself. The user can /undo it "
            "for a few minutes."
        ),
        parameters={
            "type": "object",
            "properties": {
                "id": _id_property("An item's id."),
                "text": _text_property(
                    f"The text to forget ({FORGET_MIN_CHARS} characters or more).",
                    min_chars=FORGET_MIN_CHARS,
                ),
            },
            "additionalProperties": False,
        },
    )

    memory: Forgetter
    _: KW_ONLY
    undo_minutes: int

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        arguments.only(args, ("id", "text"))
        needle = arguments.optional_text(args, "text", max_chars=MAX_TEXT_CHARS)
        if needle is None and "id" not in args:
            raise ToolError("give the id of an item, or the text to forget")
        if needle is None:
            item = await asyncio.to_thread(self.memory.find, ctx.scope, item_id(args))
            if item is None:
                return NOT_HERE
            needle = item.text
        if len(needle.strip()) < FORGET_MIN_CHARS:
            raise ToolError(f"the text to forget needs {FORGET_MIN_CHARS} characters or more")
        forgotten = await self.memory.forget(ctx.scope, ctx.session_key, needle.strip())
        ctx.forgotten.append(needle.strip())
        return forget_receipt(needle.strip(), forgotten, undo_minutes=self.undo_minutes)
