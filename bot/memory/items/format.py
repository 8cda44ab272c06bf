"""The JSONL line format of memory items: one JSON object a line, versioned, checked on read.

    {"version": 1, "id": "s-1a2b3c4d5e", "layer": "semantic", "type": "fact", "text": "…",
     "confidence": 0.8, "salience": 0.7, "tags": [], "references": ["MEMORY.md#L12"],
     "fingerprint": "…", "scope": "", "status": "active", "created_at": "2026-02-07T14:15:00+00:00",
     "updated_at": "…", "last_used_at": null, "decayed_at": null,
     "provenance": {"by": "Ann (42)", "chat": "telegram:42", "at": "…", "via": "message"}}

`provenance` is left out when unknown (items from before it was kept read without it).

A line that is not such an object (corrupt, hand-mangled, or written by a newer version) raises
`ItemFormatError`; the store keeps it verbatim. The fingerprint is recomputed from the text, so a
hand edit of the text stays consistent. A time without a zone is read as UTC. A file's lines are
split at `\\n` only (`file_lines`): a text may hold U+2028, U+2029 or U+0085, which JSON writes
as they are and `str.splitlines` would cut at.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args

from bot import versioned
from bot.memory import provenance
from bot.memory.lines import fingerprint
from bot.models import ItemStatus, MemoryItem, MemoryLayer
from bot.versioned import Fields

VERSION = 1
_STATUSES: tuple[ItemStatus, ...] = get_args(ItemStatus)


class ItemFormatError(ValueError):
    """A line that is not a memory item this version can read."""


def encode(item: MemoryItem) -> str:
    """One line of JSON, without the newline."""
    record: Fields = {
        "id": item.id,
        "layer": item.layer.value,
        "type": item.type,
        "text": item.text,
        "confidence": item.confidence,
        "salience": item.salience,
        "tags": list(item.tags),
        "references": list(item.references),
        "fingerprint": item.fingerprint,
        "scope": item.scope,
        "status": item.status,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
        "last_used_at": _time_text(item.last_used_at),
        "decayed_at": _time_text(item.decayed_at),
    }
    if item.provenance is not None:
        record["provenance"] = provenance.to_json(item.provenance)
    return versioned.encode(VERSION, record, compact=True)


def file_lines(text: str) -> list[str]:
    """The lines of a JSONL file's text, blank ones included (the final newline ends a line,
    it starts none)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def decode(line: str) -> MemoryItem:
    try:
        record = versioned.decode(line, VERSION)
    except versioned.VersionError as exc:
        raise ItemFormatError(str(exc)) from exc
    try:
        return _item(record)
    except (KeyError, TypeError, ValueError) as exc:
        raise ItemFormatError(f"bad item: {exc!r}") from exc


def _item(record: Fields) -> MemoryItem:
    text = _text(record, "text")
    status = record.get("status", "active")
    if status not in _STATUSES:
        raise ValueError(f"status {status!r}")
    return MemoryItem(
        id=_text(record, "id"),
        layer=MemoryLayer(str(record["layer"])),
        type=_text(record, "type"),
        text=text,
        fingerprint=fingerprint(text),
        created_at=_time(record["created_at"]),
        updated_at=_time(record["updated_at"]),
        scope=str(record.get("scope") or ""),
        confidence=_unit(record.get("confidence", 0.5)),
        salience=_unit(record.get("salience", 0.5)),
        tags=_strings(record.get("tags", [])),
        references=_strings(record.get("references", [])),
        last_used_at=_optional_time(record.get("last_used_at")),
        decayed_at=_optional_time(record.get("decayed_at")),
        status=status,
        provenance=provenance.from_json(record.get("provenance")),
    )


def _text(record: Fields, key: str) -> str:
    value = record[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} must be a non-empty string")
    return value


def _unit(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r} is not a number")
    return min(1.0, max(0.0, float(value)))


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return tuple(value)


def _time(value: object) -> datetime:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a time")
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _optional_time(value: object) -> datetime | None:
    return None if value is None else _time(value)


def _time_text(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()
