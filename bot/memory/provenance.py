"""Provenance: who said a remembered fact, in which chat, when, and what it came as.

Items carry it in their JSONL line (`"provenance": {"by", "chat", "at", "via"}`). MEMORY.md stays
plain text a person reads and edits: a fact's provenance is kept beside it, in `SIDE_NAME` in
the same folder, one JSON line per fact written, keyed by the fact's fingerprint (a memory
line's, `bot.memory.lines`: case, bullet and supersede mark do not count), the last line for a
fingerprint winning:

    {"version": 2, "fingerprint": "1a2b…", "by": "Ann (@ann, 42)", "chat": "telegram:42", "at": "…",
     "via": "voice"}

A line a person edits by hand has a new fingerprint, so no provenance: it reads as "written by
hand". Old files without a side file read the same way. The side file holds no fact text, so
forgetting a fact leaves nothing to scrub.

Version 1 (lines without "version") was keyed by the fingerprint of its day, which told a `+`
bullet from a `-` one: its keys are read through MEMORY.md's lines as they are (`_v1_key`, that
rule kept for this alone), and the first write to such a file rewrites it in version 2, once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast, get_args

import structlog

from bot.memory.lines import fact_of, fingerprint, unmarked
from bot.models import Provenance, Via
from bot.storage.files import ON_DISK, Documents

log = structlog.get_logger(__name__)
SIDE_NAME = "MEMORY.provenance.jsonl"
_VIAS: tuple[str, ...] = get_args(Via)
VERSION = 2
_V1_LINE_PREFIX = re.compile(r"^\s*(?:[-*+]\s+)?")  # version 1's keys: a line's bullet, then
_V1_TEXT_PREFIX = re.compile(r"^(?:[-*•]|\d+[.)])\s+")  # the item rule's of its day
_SAID: dict[Via, str] = {  # how it came, in `brief`'s words
    "message": "said",
    "voice": "said by voice",
    "photo": "in a photo's caption",
    "document": "from a document",
    "forwarded": "forwarded",
    "inference": "inferred by the model",
    "tool": "from a tool's output",
    "group": "said in the group",
}
_VIA_OF = {said: via for via, said in _SAID.items()}


def brief(origin: Provenance | None) -> str:
    """`Ann (@ann, 42), said by voice, telegram:42, 2026-11-20` (or "written by hand")."""
    if origin is None:
        return "written by hand"
    return f"{origin.by}, {_SAID[origin.via]}, {origin.chat}, {origin.at:%Y-%m-%d}"


def from_brief(text: str) -> Provenance | None:
    """The provenance `brief` wrote, or None when `text` does not read as one (edited by hand,
    or "written by hand")."""
    parts = text.rsplit(", ", 3)
    if len(parts) != 4 or parts[1] not in _VIA_OF:
        return None
    by, said, chat, day = parts
    try:
        at = datetime.fromisoformat(day).replace(tzinfo=UTC)
    except ValueError:
        return None
    return Provenance(by=by, chat=chat, at=at, via=_VIA_OF[said])


def said_as(origin: Provenance) -> str:
    """How it came: "said", "said by voice", "from a document" …"""
    return _SAID[origin.via]


def to_json(origin: Provenance) -> dict[str, str]:
    return {"by": origin.by, "chat": origin.chat, "at": origin.at.isoformat(), "via": origin.via}


def from_json(record: object) -> Provenance | None:
    """The provenance a JSON object holds, or None when it holds none that reads."""
    if not isinstance(record, dict):
        return None
    by, chat, at, via = (record.get(key) for key in ("by", "chat", "at", "via"))
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
        lines = [_record(fingerprint(fact), origin) for fact in facts]
        if not lines:
            return
        records = self._records()
        if any(version == 1 for version, _, _ in records):  # once: the file in version 2
            known = self._keyed(records)
            lines = [_record(key, known_origin) for key, known_origin in known.items()] + lines
            self.documents.write(self.path, _lines(lines))
        else:
            self.documents.append(self.path, _lines(lines))

    def read(self) -> Mapping[str, Provenance]:
        """Each fingerprint's provenance (lines that do not read are skipped)."""
        return self._keyed(self._records())

    def of(self, fact: str) -> Provenance | None:
        return self.read().get(fingerprint(fact))

    def _keyed(self, records: list[tuple[int, str, Provenance]]) -> dict[str, Provenance]:
        moved = self._v1_keys() if any(version == 1 for version, _, _ in records) else {}
        found: dict[str, Provenance] = {}
        for version, key, origin in records:
            found[moved.get(key, key) if version == 1 else key] = origin
        return found

    def _records(self) -> list[tuple[int, str, Provenance]]:
        """(version, fingerprint, provenance) of each line that reads, in order."""
        found: list[tuple[int, str, Provenance]] = []
        for line in self._text(self.path).splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            origin = from_json(record)
            version = record.get("version", 1) if isinstance(record, dict) else None
            key = record.get("fingerprint") if isinstance(record, dict) else None
            if origin is not None and version in (1, VERSION) and isinstance(key, str):
                found.append((version, key, origin))
        return found

    def _v1_keys(self) -> dict[str, str]:
        """Version 1's key of each MEMORY.md line → its fingerprint now."""
        lines = self._text(self.memory_path).splitlines()
        return {_v1_key(line): fingerprint(line) for line in lines if fact_of(line)}

    def _text(self, path: Path) -> str:
        try:
            data = self.documents.read(path)
        except NotADirectoryError:
            return ""
        except OSError as exc:
            log.warning("provenance_unreadable", error=type(exc).__name__)
            return ""
        return "" if data is None else data.decode("utf-8", errors="replace")


def _record(key: str, origin: Provenance) -> str:
    return json.dumps(
        {"version": VERSION, "fingerprint": key, **to_json(origin)}, ensure_ascii=False
    )


def _lines(lines: Iterable[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


def _v1_key(line: str) -> str:
    """The key version 1 gave a line's fact."""
    fact = unmarked(_V1_LINE_PREFIX.sub("", line, count=1)).strip()
    flat = _V1_TEXT_PREFIX.sub("", " ".join(fact.casefold().split())).rstrip(". ")
    return hashlib.sha256(flat.encode("utf-8")).hexdigest()[:16]


def of_line(known: Mapping[str, Provenance], line: str) -> Provenance | None:
    """A MEMORY.md line's provenance among `known` (its bullet and supersede mark aside)."""
    return known.get(fingerprint(line)) if fact_of(line) else None
