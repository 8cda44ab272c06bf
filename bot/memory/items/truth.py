"""Files stay the truth: the semantic items made of MEMORY.md lines follow those lines.

An item made of a line cites it, `MEMORY.md#L12` (or `chats/<key>/MEMORY.md#L3`). When the file
is read again after it changed (`follow`), each such item is matched to the file as it is now:

- a line with the item's fingerprint (its text, case and bullet aside) is the item's line: the
  item cites it where it is now, and is "superseded" when the line carries the supersede mark
  (`notes.supersede`), active again when it does not (a line put back by hand brings it back);
- else the line it cited, when it is a fact line no other item holds and reads as an edit of
  the item's text (`SAME_LINE`), was changed: the item takes its text (a person's or
  consolidation's correction wins over the old wording);
- else the line is gone: the item is "retired" — never shown, not searched.

A forgotten item stays forgotten. Pure: the writer (`ItemKeeper.follow`) writes the changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from difflib import SequenceMatcher

from bot.memory.lines import bare, fact_of, fingerprint, is_marked, unbulleted, unmarked, until_of
from bot.models import ItemStatus, MemoryItem

SAME_LINE = 0.6  # how alike a cited line's new text must be to its item's to be its edit


def fact_lines(text: str) -> dict[int, str]:
    """The file's fact lines by number (from 1): not blank, not a heading."""
    found = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if fact_of(line) is not None:
            found[number] = unbulleted(line).strip()
    return found


def follow(
    items: Sequence[MemoryItem], text: str, name: str, *, now: datetime
) -> dict[str, MemoryItem]:
    """The changes that make the items citing `name#L…` agree with `text`, by id."""
    lines = fact_lines(text)
    where: dict[str, int] = {}  # each text's line: its current one when it has one
    for number, fact in lines.items():
        key = fingerprint(fact)
        if key not in where or (until_of(lines[where[key]]) and not until_of(fact)):
            where[key] = number
    cited = [item for item in items if item.status != "forgotten" and _cited(item, name)]
    held = {item.fingerprint for item in items if item.status != "forgotten"}
    changes: dict[str, MemoryItem] = {}
    followed: set[str] = set()  # the lines' fingerprints an item follows already
    for item in sorted(cited, key=lambda i: i.created_at):
        clean = _unmarked(item)
        found = where.get(clean.fingerprint)
        if clean.fingerprint in followed:
            new = _retired(clean, now)  # a twin of an older item of the same line
        elif found is not None:
            new = _at(clean, name, found, lines[found], now)
        else:
            new = _changed_or_gone(clean, name, lines, held, now)
        if new.status != "retired":
            followed.add(new.fingerprint)
        if new != item:
            changes[item.id] = new
            held.add(new.fingerprint)
    return changes


def _unmarked(item: MemoryItem) -> MemoryItem:
    """The item with its text as a fact: a supersede mark is a line's, never an item's."""
    if not is_marked(item.text):
        return item
    text = bare(item.text)
    return replace(item, text=text, fingerprint=fingerprint(text))


def _retired(item: MemoryItem, now: datetime) -> MemoryItem:
    return item if item.status == "retired" else replace(item, status="retired", updated_at=now)


def _changed_or_gone(
    item: MemoryItem, name: str, lines: Mapping[int, str], held: set[str], now: datetime
) -> MemoryItem:
    number = _cited(item, name)
    fact = lines.get(number) if number else None
    if number and fact and fingerprint(fact) not in held and _alike(item.text, fact):
        text = bare(fact)
        retexted = replace(item, text=text, fingerprint=fingerprint(text))
        return _at(retexted, name, number, fact, now)
    return _retired(item, now)


def _alike(old: str, new: str) -> bool:
    """Whether `new` reads as an edit of `old`, not another fact written in its place."""
    ratio = SequenceMatcher(None, old.casefold(), unmarked(new).casefold()).ratio()
    return ratio >= SAME_LINE


def _at(item: MemoryItem, name: str, number: int, line: str, now: datetime) -> MemoryItem:
    """The item citing line `number`, with the status the line gives it."""
    status: ItemStatus = "superseded" if until_of(line) else "active"
    if item.status == "decayed" and status == "active":
        status = "decayed"
    prefix = f"{name}#L"
    references = tuple(
        f"{prefix}{number}" if ref.startswith(prefix) else ref for ref in item.references
    )
    new = replace(item, status=status, references=references)
    if new.status != item.status or new.text != item.text:
        new = replace(new, updated_at=now)
    return new


def _cited(item: MemoryItem, name: str) -> int | None:
    """The line number of `name` the item cites, or None."""
    prefix = f"{name}#L"
    for ref in item.references:
        if ref.startswith(prefix) and ref[len(prefix) :].isdigit():
            return int(ref[len(prefix) :])
    return None
