"""LLM markdown → Telegram text + entities, split under the message limit without losing text.

Markdown is rendered; HTML is not: a tag in prose (`<text>`, `<div>`, `List<String>`, an HTML
block, a comment) and an address in brackets (`<ann@x.org>`) are shown as written. Entities are
plain dicts in Bot API shape, so this module stays free of python-telegram-bot.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pyromark
import structlog
import telegramify_markdown
from telegramify_markdown.converter import STANDARD_OPTIONS

log = structlog.get_logger(__name__)
TELEGRAM_LIMIT = 4096
_ENTITY_FIELDS = ("type", "offset", "length", "url", "language", "custom_emoji_id")


@dataclass(frozen=True)
class Chunk:
    text: str
    entities: list[dict[str, Any]] = field(default_factory=list)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def render(markdown: str, *, limit: int = TELEGRAM_LIMIT) -> list[Chunk]:
    """Pieces to send in order; each under `limit` UTF-16 units, together the whole reply."""
    try:
        text, entities = telegramify_markdown.convert(literal_tags(markdown))
    except Exception:
        log.warning("markdown_convert_failed", exc_info=True)
        text, entities = markdown, []
    if not text.strip():
        text, entities = markdown, []
    pieces = telegramify_markdown.split_entities(text, entities, limit)
    return [Chunk(piece, [_entity(e) for e in ents]) for piece, ents in pieces if piece.strip()]


def literal_tags(markdown: str) -> str:
    """`markdown` with a backslash before each `<` that would start HTML or an email link, so
    the renderer shows it as text (code keeps its `<` as is). Each pass escapes the tags the
    parser still sees; an escaped `<` never starts one again, so this ends."""
    while offsets := _tag_starts(markdown):
        source = markdown.encode("utf-8")
        bounds = [0, *offsets, len(source)]
        markdown = b"\\".join(source[a:b] for a, b in itertools.pairwise(bounds)).decode()
    return markdown


def _tag_starts(markdown: str) -> list[int]:
    """UTF-8 offsets of the `<` that begin HTML or an email autolink in `markdown`."""
    if "<" not in markdown:
        return []
    source = markdown.encode("utf-8")
    starts: set[int] = set()
    for event, where in pyromark.events_with_range(markdown, options=STANDARD_OPTIONS):
        start = where["start"]
        if _is_tag(event) and source[start : start + 1] == b"<":
            starts.add(start)
    return sorted(starts)


def _is_tag(event: Any) -> bool:
    if not isinstance(event, dict):
        return False
    if "Html" in event or "InlineHtml" in event:
        return True
    link = event.get("Start")
    return isinstance(link, dict) and link.get("Link", {}).get("link_type") == "Email"


def _entity(entity: Any) -> dict[str, Any]:
    values = {name: getattr(entity, name, None) for name in _ENTITY_FIELDS}
    return {name: value for name, value in values.items() if value is not None}
