"""A memory line: what one line of MEMORY.md (or a chat's memory, or a tag's fact) is. The one
owner of that rule; every other module reads a line through it (as Starlette's `Headers` owns a
header's normal form).

A person writes a fact as a list item in any form markdown knows, or as plain text; the bot
writes `- fact`:

    - Likes tea        * Likes tea        + Likes tea        • Likes tea        1. Likes tea

All five are one fact:

- `bare`: the fact itself: no indent, no bullet (nor a doubled one: `- - x`), no supersede mark;
- `normal`: the fact as compared: bare, case-folded, whitespace collapsed, full stops at its end
  dropped;
- `fingerprint`: a short hash of the normal form: the same fact, the same fingerprint (items are
  deduplicated and matched to their line by it, the provenance side file is keyed by it);
- `fact_of`: a line's fact, or None for a blank line or a heading.

The supersede mark (`bot.memory.notes.supersede` says when a line gets it) ends a line that
stopped being true, with the day it did: `- Ann lives in Lyon _(was, until 2026-11-20)_`
(`marked`, `unmarked`, `until_of`). It is never part of the fact.
"""

from __future__ import annotations

import hashlib
import re
from datetime import date

MARK = re.compile(r"\s*_\(was, until (\d{4}-\d{2}-\d{2})\)_\s*$")
_BULLET = re.compile(r"^\s*(?:(?:[-*+•]|\d+[.)])\s+)+")


def bullet_of(line: str) -> str:
    """The line's bullet as written, with the space after it (`"1. "`), "" for none."""
    text = line.lstrip()
    found = _BULLET.match(text)
    return found[0] if found else ""


def unbulleted(text: str) -> str:
    """`text` without its indent and bullet (the rest as it is)."""
    return _BULLET.sub("", text, count=1)


def bare(line: str) -> str:
    """The fact a line holds: no indent, bullet or supersede mark, stripped."""
    return unmarked(unbulleted(line)).strip()


def fact_of(line: str) -> str | None:
    """The line's fact; None for a blank line or a heading."""
    fact = bare(line)
    return fact if fact and not fact.startswith("#") else None


def normal(text: str) -> str:
    """The fact as compared: bare, case-folded, whitespace collapsed, no full stop at its end."""
    return " ".join(bare(text).casefold().split()).rstrip(". ")


def fingerprint(text: str) -> str:
    return hashlib.sha256(normal(text).encode("utf-8")).hexdigest()[:16]


def marked(line: str, until: date) -> str:
    """`line` marked superseded from `until` (a line marked already keeps its first day)."""
    if MARK.search(line):
        return line
    body = line.rstrip("\n")
    return f"{body.rstrip()} _(was, until {until.isoformat()})_" + line[len(body) :]


def until_of(line: str) -> date | None:
    """The day a marked line stopped being true, or None for a current one."""
    found = MARK.search(line)
    if found is None:
        return None
    try:
        return date.fromisoformat(found[1])
    except ValueError:
        return None


def unmarked(line: str) -> str:
    """The line without its supersede mark (its bullet kept)."""
    return MARK.sub("", line)


def is_marked(line: str) -> bool:
    return MARK.search(line) is not None
