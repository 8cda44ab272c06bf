"""`memory_add`, `memory_update`, `memory_promote`, `memory_forget`: the model's own changes to
structured memory items (seed 000's MemoryTool), through `ItemWriter`.

Every call acts in the calling chat's scope only: an id from another chat's items is answered
"no item with that id here", exactly like an id that never existed. Each answer names the item
id, so the model can refer to the item later.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

import structlog

from bot.errors import ToolError
from bot.models import MemoryItem, MemoryLayer, MemoryScope, ToolSpec
from bot.tools import arguments
from bot.tools.registry import ToolContext

MAX_TEXT_CHARS = 2000
MAX_TAGS = 10
TAG_CHARS = 40
TYPES = ("fact", "preference", "constraint", "decision", "todo", "command", "error", "error_fix")
LAYERS = tuple(layer.value for layer in MemoryLayer)
NOT_HERE = "no item with that id here"
log = structlog.get_logger(__name__)
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ItemChanges(Protocol):
    """What the tools need of `ItemWriter`: each change returns None for an id the scope
    does not hold."""

    async def add(
        self,
        scope: MemoryScope,
        layer: MemoryLayer,
        text: str,
        *,
        type: str = ...,
        tags: Sequence[str] = ...,
    ) -> MemoryItem: ...

    async def update(
        self,
        scope: MemoryScope,
        item_id: str,
        *,
        text: str | None = ...,
        confidence: float | None = ...,
        salience: float | None = ...,
        tags: Sequence[str] | None = ...,
    ) -> MemoryItem | None: ...

    async def promote(self, scope: MemoryScope, item_id: str) -> MemoryItem | None: ...

    async def forget(self, scope: MemoryScope, item_id: str) -> MemoryItem | None: ...


class IndexSync(Protocol):
    """The search index catching up with the item files (`IndexService.sync`): a memory_search
    later in the same turn finds a changed item."""

    async def sync(self) -> None: ...


class ItemTool:
    """What the four tools share: the writer, and indexing what they changed."""

    def __init__(self, writer: ItemChanges, *, index: IndexSync | None = None) -> None:
        self.writer = writer
        self.index = index

    async def indexed(self, item: MemoryItem | None) -> MemoryItem | None:
        """`item`, once it is in the index. The index is rebuildable and the item is stored:
        a failure here is logged, never the tool's answer."""
        if item is None or self.index is None:
            return item
        try:
            await self.index.sync()
        except Exception:
            log.warning("index_item_failed", item=item.id, exc_info=True)
        return item


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


def _id_schema(description: str) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {"id": {"type": "string", "description": description, "minLength": 1}},
        "required": ["id"],
        "additionalProperties": False,
    }


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
                "text": {
                    "type": "string",
                    "description": "The item, one short self-contained statement.",
                    "minLength": 1,
                    "maxLength": MAX_TEXT_CHARS,
                },
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
        item = await self.writer.add(ctx.scope, MemoryLayer(layer), text, type=kind, tags=tags)
        await self.indexed(item)
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
                "id": {"type": "string", "description": "The item's id.", "minLength": 1},
                "text": {
                    "type": "string",
                    "description": "The new text.",
                    "minLength": 1,
                    "maxLength": MAX_TEXT_CHARS,
                },
                "confidence": {
                    "type": "number",
                    "description": "How sure it is true, 0 to 1.",
                    "minimum": 0,
                    "maximum": 1,
                },
                "salience": {
                    "type": "number",
                    "description": "How much it matters, 0 to 1.",
                    "minimum": 0,
                    "maximum": 1,
                },
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
        item = await self.indexed(
            await self.writer.update(
                ctx.scope, target, text=text, confidence=confidence, salience=salience, tags=tags
            )
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
        item = await self.indexed(await self.writer.promote(ctx.scope, target))
        if item is None:
            return f"{NOT_HERE} (or it was forgotten)"
        return f"promoted {target} to {describe(item)}"


class MemoryForget(ItemTool):
    spec = ToolSpec(
        name="memory_forget",
        description=(
            "Forget a memory item of this chat by its id: it is no longer shown or recalled "
            "(kept on disk, so a person can restore it)."
        ),
        parameters=_id_schema("The item's id."),
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        arguments.only(args, ("id",))
        item = await self.indexed(await self.writer.forget(ctx.scope, item_id(args)))
        return NOT_HERE if item is None else f"forgot {describe(item)}"
