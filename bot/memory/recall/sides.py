"""Each exchange's words once in `# Relevant Memory`: a hit shows them as the exchange
(`User: …` / `Assistant: …` lines) or as its daily note's line (`User: … | Assistant: …`), and
a side that a better hit showed is left out (`once_each`). Each line's sides are read once
(`_note_sides`, `_exchange_key`: cached; the lines of the hits a section looks at come up turn
after turn), what was seen is checked every time.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from bot.index.search import Hit
from bot.index.snippets import GAP

EXCHANGE = "exchange"  # a hit's kind for a past exchange (`bot.index.memory_index`)
SIDE_KEY_CHARS = 40  # a side's opening that tells its exchange (`_side_key`)
_CLOCK_AT = re.compile(r"^\[\d{1,2}:\d{2}\]\s*")  # a note line's `[HH:mm]`


def once_each(hits: Iterable[Hit]) -> Iterator[Hit]:
    """The hits with each exchange's words once, whether a hit shows them as the exchange
    (`User: …` / `Assistant: …` lines) or as its daily note's line (`User: … | Assistant: …`).
    A note line is made of its exchange (`NoteFormat`: each side folded and cut), so a side
    that opens as one a better hit showed (`_side_key`) is that side again, left out; a side
    that a note cut (`…`) counts as shown for no exchange, whose whole side says more. On
    REALTALK 563 of 679 sections showed a turn twice so (8% of their hits), as a long
    message's note line and exchange never hold each other (`overlap` compares whole lines).
    """
    seen: set[tuple[str, str]] = set()
    for hit in hits:
        lines = [_once(line, hit.kind == EXCHANGE, seen) for line in hit.text.split("\n")]
        kept = "\n".join(line for n, line in enumerate(lines) if _keep(lines, n))
        if kept.replace(GAP, "").strip():
            yield hit if kept == hit.text else replace(hit, text=kept)


def _once(line: str, exchange: bool, seen: set[tuple[str, str]]) -> str:
    """The line without the sides `seen` holds (`GAP` when none is left); the sides it keeps
    are added to `seen` (a note's cut side only for other notes)."""
    if exchange:
        key = _exchange_key(line)
        if key is None:
            return line
        if key in seen:
            return GAP
        seen.add(key)
        return line
    parsed = _note_sides(line)
    if parsed is None:
        return line
    clock, sides = parsed
    kept = []
    for side, said, key, cut in sides:
        if key is not None and (key in seen or (side, "…" + key[1]) in seen):
            said = ""
        elif key is not None:
            seen.add(key if not cut else (side, "…" + key[1]))
        kept.append(said)
    if not any(said.strip() for said in kept):
        return GAP
    return f"{clock}User: {kept[0]} | Assistant: {kept[1]}"


_Side = tuple[str, str, tuple[str, str] | None, bool]  # label, what it said, key, cut by a note


@functools.lru_cache(maxsize=4096)
def _exchange_key(line: str) -> tuple[str, str] | None:
    """An exchange's line's `_side_key`."""
    side, _, said = line.partition(": ")
    return _side_key(side, said)


@functools.lru_cache(maxsize=4096)
def _note_sides(line: str) -> tuple[str, tuple[_Side, _Side]] | None:
    """A daily note line's clock (with what follows it, "" for none) and its two sides; None
    for another line."""
    clock = _CLOCK_AT.match(line)
    body = line[clock.end() :] if clock else line
    user, bar, assistant = body.partition(" | Assistant: ")
    if not bar or not user.startswith("User: "):
        return None
    said = user.removeprefix("User: ")
    sides = (
        ("User", said, _side_key("User", said), said.rstrip().endswith(GAP)),
        (
            "Assistant",
            assistant,
            _side_key("Assistant", assistant),
            assistant.rstrip().endswith(GAP),
        ),
    )
    return clock[0] if clock else "", sides


def _side_key(side: str, said: str) -> tuple[str, str] | None:
    """What a side of an exchange opens with, folded: (label, its first `SIDE_KEY_CHARS`);
    None for a side too short to tell two exchanges apart ("ok", "Yes!")."""
    if side not in ("User", "Assistant"):
        return None
    opening = " ".join(said.replace(GAP, " ").split()).casefold()
    return (side, opening[:SIDE_KEY_CHARS]) if len(opening) >= SIDE_KEY_CHARS else None


def _keep(lines: Sequence[str], n: int) -> bool:
    """Whether line `n` stays: a `GAP` once, not right after another."""
    return lines[n] != GAP or n == 0 or lines[n - 1] != GAP
