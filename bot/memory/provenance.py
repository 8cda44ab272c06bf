"""Provenance: who said a remembered fact, in which chat, when, and what it came as.

Items carry it in their JSONL line (`"provenance": {"by", "chat", "at", "via"}`). MEMORY.md stays
plain text a person reads and edits: a fact's provenance is kept beside it, in `SIDE_NAME` in
the same folder, one JSON line per fact written, keyed by the fact's fingerprint (the item
rule's: case and bullets do not count), the last line for a fingerprint winning:

    {"fingerprint": "1a2b…", "by": "Ann (@ann, 42)", "chat": "telegram:42", "at": "…",
     "via": "voice"}

A line a person edits by hand has a new fingerprint, so no provenance: it reads as "written by
hand". Old files without a side file read the same way. The side file holds no fact text, so
forgetting a fact leaves nothing there to scrub.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast, get_args

import structlog

from bot.memory.items.rules import fingerprint
from bot.memory.notes.supersede import unmarked
from bot.models import Provenance, Via
from bot.storage.files import ON_DISK, Documents

log = structlog.get_logger(__name__)
SIDE_NAME = "MEMORY.provenance.jsonl"
_VIAS: tuple[str, ...] = get_args(Via)
_BULLET = re.compile(r"^\s*(?:[-*+]\s+)?")
_SAID = {
    "message": "said",
    "voice": "said by voice",
    "photo": "in a photo's caption",
    "document": "from a document",
    "forwarded": "forwarded",
    "inference": "inferred by the model",
    "tool": "from a tool's output",
    "group": "said in the group",
}


def brief(origin: Provenance | None) -> str:
    """`Ann (@ann, 42), said by voice, telegram:42, 2026-11-20` (or "written by hand")."""
    if origin is None:
        return "written by hand"
    return f"{origin.by}, {_SAID[origin.via]}, {origin.chat}, {origin.at:%Y-%m-%d}"


def said_as(origin: Provenance) -> str:
    """How it came: "said", "said by voice", "from a document" …"""
    return _SAID[origin.via]


def to_json(origin: Provenance) -> dict[str, str]:
    return {"by": origin.by, "chat": origin.chat, "at": origin.at.isoformat(), "via": origin.via}


def from_json(record: object) -> Provenance | None:
    """The provenance a JSON object holds, or None when it holds none that reads."""
    if not isinstance(record, dict):
        return None
    fields = cast(dict[str, Any], record)
    by, chat, at, via = (fields.get(key) for key in ("by", "chat", "at", "via"))
    if not all(isinstance(value, str) for value in (by, chat, at)) or via not in _VIAS:
        return None
    try:
        moment = datetime.fromisoformat(str(at))
    except ValueError:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return Provenance(by=str(by), chat=str(chat), at=moment, via=cast(Via, via))


@dataclass(frozen=True)
class FactOrigins:
    """The side file of one MEMORY.md (blocking; the caller holds MEMORY.md's lock to write)."""

    memory_path: Path
    documents: Documents = ON_DISK  # where MEMORY.md is kept (`Workspace.documents`)

    @property
    def path(self) -> Path:
        return self.memory_path.with_name(SIDE_NAME)

    def add(self, facts: Iterable[str], origin: Provenance) -> None:
        lines = [
            json.dumps({"fingerprint": fingerprint(fact), **to_json(origin)}, ensure_ascii=False)
            for fact in facts
        ]
        if lines:
            data = "".join(line + "\n" for line in lines).encode("utf-8")
            self.documents.append(self.path, data)

    def read(self) -> Mapping[str, Provenance]:
        """Each fingerprint's provenance (lines that do not read are skipped)."""
        try:
            data = self.documents.read(self.path)
        except NotADirectoryError:
            return {}
        except OSError as exc:
            log.warning("provenance_unreadable", error=type(exc).__name__)
            return {}
        if data is None:
            return {}
        text = data.decode("utf-8", errors="replace")
        found: dict[str, Provenance] = {}
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            origin = from_json(record)
            if origin is not None and isinstance(record.get("fingerprint"), str):
                found[record["fingerprint"]] = origin
        return found

    def of(self, fact: str) -> Provenance | None:
        return self.read().get(fingerprint(fact))


def of_line(known: Mapping[str, Provenance], line: str) -> Provenance | None:
    """A MEMORY.md line's provenance among `known` (its bullet and supersede mark aside)."""
    fact = unmarked(_BULLET.sub("", line, count=1)).strip()
    return known.get(fingerprint(fact)) if fact and not fact.startswith("#") else None
