"""Memory items' own rules: what makes two the same, and how one is made, reinforced, promoted
and decayed. Pure functions over `MemoryItem`; files are `item_store`'s, writes `item_keeper`'s.

- **Fingerprint**: a hash of the text's normal form (`bot.memory.lines`: case, whitespace, a
  bullet in any of its forms and full stops at the end aside). Same fingerprint in the same
  layer and scope is the same item.
- **Reinforce**: a second sighting updates the first, whose wording stays. Confidence combines
  as two independent witnesses, ``1 - (1 - a)(1 - b)`` (0.5 seen twice is 0.75); salience takes
  the larger and rises by `SALIENCE_BUMP`; references and tags are merged; a decayed item is
  active again.
- **Promote**: an episodic item is copied to the semantic layer with a reference `item:<id>`
  to the original, which stays.
- **Decay**: an active item unused (not written, shown or decayed) for `after` has its salience
  halved, never below `SALIENCE_FLOOR`; at or below `DECAYED_AT` it is marked "decayed".
  Nothing is ever deleted.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from dataclasses import replace
from datetime import date, datetime, timedelta

from bot.memory.lines import fingerprint as fingerprint  # items are told apart by it
from bot.models import ItemStatus, MemoryItem, MemoryLayer, MemoryScope
from bot.storage.lines import without_controls

SALIENCE_BUMP = 0.1
SALIENCE_FLOOR = 0.05
DECAYED_AT = 0.1
PROMOTABLE = frozenset({"fact", "preference", "constraint"})  # a turn is an event, not a fact
_EPISODIC_ID = re.compile(r"^e(\d{8})-")


def new_id(layer: MemoryLayer, at: datetime) -> str:
    """`e20260207-…` for episodic items (the day names their file), `s-…`, `p-…` otherwise."""
    token = secrets.token_hex(5)
    if layer is MemoryLayer.EPISODIC:
        return f"e{at:%Y%m%d}-{token}"
    return f"{layer.value[0]}-{token}"


def episodic_day(item_id: str) -> date | None:
    """The day an episodic item's id names, or None for any other id."""
    match = _EPISODIC_ID.match(item_id)
    if match is None:
        return None
    try:
        return date.fromisoformat(match[1])  # "YYYYMMDD" is ISO 8601's basic format
    except ValueError:
        return None


def new_item(
    layer: MemoryLayer,
    type: str,
    text: str,
    *,
    scope: MemoryScope,
    at: datetime,
    confidence: float,
    salience: float,
    tags: Iterable[str] = (),
    references: Iterable[str] = (),
) -> MemoryItem:
    """A new item; `ValueError` for an empty text (a line without text is not an item).
    Control characters (a NUL in a reply) are taken out, as from a note line."""
    text = without_controls(text)
    if not text.strip():
        raise ValueError("a memory item needs a text")
    return MemoryItem(
        id=new_id(layer, at),
        layer=layer,
        type=type,
        text=text.strip(),
        fingerprint=fingerprint(text),
        created_at=at,
        updated_at=at,
        scope=scope.chat_key or "",
        confidence=unit(confidence),
        salience=unit(salience),
        tags=_merged((), tags),
        references=_merged((), references),
    )


def reinforce(old: MemoryItem, new: MemoryItem) -> MemoryItem:
    """`old` seen again as `new`: the stored id, text and creation time stay, the rest is
    merged."""
    return replace(
        old,
        updated_at=max(old.updated_at, new.updated_at),
        confidence=unit(1 - (1 - old.confidence) * (1 - new.confidence)),
        salience=unit(max(old.salience, new.salience) + SALIENCE_BUMP),
        tags=_merged(old.tags, new.tags),
        references=_merged(old.references, new.references),
        status="active",
    )


def promoted(item: MemoryItem, at: datetime) -> MemoryItem:
    """The semantic copy of an episodic item, pointing back at it."""
    return replace(
        item,
        id=new_id(MemoryLayer.SEMANTIC, at),
        layer=MemoryLayer.SEMANTIC,
        type="fact" if item.type == "turn" else item.type,
        created_at=at,
        updated_at=at,
        references=_merged(item.references, [f"item:{item.id}"]),
        last_used_at=None,
        decayed_at=None,
    )


def can_promote(item: MemoryItem, *, min_confidence: float) -> bool:
    return (
        item.layer is MemoryLayer.EPISODIC
        and item.type in PROMOTABLE
        and item.status == "active"
        and item.confidence >= min_confidence
    )


def decayed(item: MemoryItem, now: datetime, *, after: timedelta) -> MemoryItem | None:
    """The item with its salience lowered when it has been idle for `after`, else None."""
    idle_since = max(t for t in (item.updated_at, item.last_used_at, item.decayed_at) if t)
    if item.status != "active" or now - idle_since < after:
        return None
    salience = max(SALIENCE_FLOOR, item.salience / 2)
    status: ItemStatus = "decayed" if salience <= DECAYED_AT else "active"
    return replace(item, salience=salience, decayed_at=now, status=status)


def used(item: MemoryItem, at: datetime) -> MemoryItem:
    return replace(item, last_used_at=at)


def unit(value: float) -> float:
    """`value` within 0–1, rounded to 4 places."""
    return min(1.0, max(0.0, round(value, 4)))


def _merged(first: Iterable[str], second: Iterable[str]) -> tuple[str, ...]:
    """Both in order, each once, blanks dropped."""
    return tuple(dict.fromkeys(s for s in (*first, *second) if s.strip()))
