"""LLM markdown → Telegram text + entities, split under the message limit without losing text.

Markdown is rendered; HTML is not: a tag in prose (`<text>`, `<div>`, `List<String>`, an HTML
block, a comment) and an address in brackets (`<ann@x.org>`) are shown as written
(`bot.channels.markdown`). Entities are plain dicts in Bot API shape, so this module stays free
of python-telegram-bot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import structlog
import telegramify_markdown

from bot.channels.markdown import literal_tags

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


def _entity(entity: Any) -> dict[str, Any]:
    values = {name: getattr(entity, name, None) for name in _ENTITY_FIELDS}
    return {name: value for name, value in values.items() if value is not None}
