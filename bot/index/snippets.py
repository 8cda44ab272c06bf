"""Snippets: the part of a chunk a hit shows — the lines that matched, not the whole chunk.

A chunk is lines (a daily note: one exchange a line; an exchange: `User:` and `Assistant:`).
A chunk of at most `WHOLE_CHARS` is shown whole. Otherwise each line scores the weight of the
distinct query terms it holds (`Terms`: a term's inverse document frequency, so a name in
every greeting weighs little; a term matches a word that starts with its stem: "jobs" finds
"job", "moved" finds "moving"). Lines are chosen by the terms that tell them apart: a term
every line holds (a speaker's name in each line of a two-person conversation) is left out of
that choice, and when no other term is found only the first line holding it is shown, not
all. The best line is shown, and the other lines that score at least half as much, best
first, while they fit `limit` characters. A shown line shorter than
`CONTEXT_CHARS` brings the line before it (its question: "Yes, the blue one." says little
alone), and a line that short next to a shown one comes along (an answer: "Got it."), room
permitting. Lines keep their order; "…" (`GAP`) stands where lines were left out, on a line
of its own. A chunk no term matches (a vector hit) shows its first lines; a line longer than
`limit` is cut to a window from a little before its first match. `merge` joins two chunks of
one file that overlap or touch (the chunker repeats a chunk's last lines at the next one's
start), so that a fact on the cut is one hit, shown once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

SNIPPET_CHARS = 700
WHOLE_CHARS = 280  # an exchange of a few sentences is clearer whole than cut
CONTEXT_CHARS = 80  # a shorter matched line brings the line before it
GAP = "…"
_SUFFIXES = ("ing", "ies", "ied", "es", "ed", "s", "ly")
_MIN_STEM = 3


@dataclass(frozen=True)
class Cut:
    text: str  # what the hit shows
    best: float  # the weight of the terms its best line holds (0: no term found)


@dataclass(frozen=True)
class Terms:
    """A query's terms as snippets seek them: their stems' weights, and one pattern for all."""

    stems: Mapping[str, float]
    pattern: re.Pattern[str] | None

    @classmethod
    def of(cls, weights: Mapping[str, float]) -> Terms:
        """From each term's weight (a stem shared by two terms weighs as the heavier)."""
        stems: dict[str, float] = {}
        for term, weight in weights.items():
            if term:
                stem = _stem(term)
                stems[stem] = max(weight, stems.get(stem, 0.0))
        return cls(stems, _pattern(tuple(sorted(stems, key=len, reverse=True))))


def snippet(text: str, terms: Sequence[str], limit: int = SNIPPET_CHARS) -> str:
    """What a hit shows of its chunk's `text` for the query `terms`, all weighing alike."""
    return cut(text, Terms.of(dict.fromkeys(terms, 1.0)), limit).text


def best_weight(text: str, terms: Terms) -> float:
    """How well the best line of `text` matches the query's `terms` (`Cut.best`, without
    the cut: what hits are ordered by before the shown ones are cut)."""
    return max(_scores(_found(_lines(text), terms), terms), default=0.0)


def cut(text: str, terms: Terms, limit: int = SNIPPET_CHARS) -> Cut:
    """What a hit shows of its chunk's `text` for the query's `terms` (see the module), and
    how well its best line matches."""
    lines = _lines(text)
    pattern = terms.pattern
    found = _found(lines, terms)
    scores = _scores(found, terms)
    best = max(scores, default=0.0)
    if len(text) <= min(limit, WHOLE_CHARS):
        return Cut(text, best)
    telling = _telling(found, terms)
    if best > 0 and max(telling) == 0:  # no term tells the lines apart: the first best one
        telling = [float(n == scores.index(best)) for n in range(len(lines))]
    chosen = _choose(lines, telling, limit)
    shown = [_window(lines[n], pattern, limit) for n in chosen]
    return Cut("\n".join(_with_gaps(chosen, shown, len(lines))), best)


def merge(first: str, second: str) -> str:
    """Two chunks' texts as one: `second`'s lines after `first`'s, without the lines they
    share where they overlap (the end of `first` is the start of `second`)."""
    head, tail = first.split("\n"), second.split("\n")
    for size in range(min(len(head), len(tail)), 0, -1):
        if head[-size:] == tail[:size]:
            return "\n".join([*head, *tail[size:]])
    return "\n".join([*head, *tail])


def _choose(lines: Sequence[str], scores: Sequence[float], limit: int) -> list[int]:
    """The numbers of the lines shown, in order."""
    best = max(scores, default=0)
    if best == 0:
        return _head(lines, limit)
    ranked = sorted(range(len(lines)), key=lambda n: (-scores[n], n))
    chosen: set[int] = set()
    room = limit
    for n in ranked:
        if 2 * scores[n] < best:
            break
        if chosen and len(lines[n]) > room:
            continue
        chosen.add(n)
        room -= len(lines[n]) + 1
    for n in sorted(chosen):
        for near in _context(lines, n):
            if near not in chosen and len(lines[near]) < room:
                chosen.add(near)
                room -= len(lines[near]) + 1
    return sorted(chosen)


def _context(lines: Sequence[str], n: int) -> list[int]:
    """The lines worth showing beside a matched line `n`: the one before when `n` is short
    (the question it answers), and a short one on either side (a reply like "Got it.")."""
    near = [m for m in (n - 1, n + 1) if 0 <= m < len(lines)]
    return [
        m
        for m in near
        if len(lines[m]) < CONTEXT_CHARS or (m < n and len(lines[n]) < CONTEXT_CHARS)
    ]


def _head(lines: Sequence[str], limit: int) -> list[int]:
    chosen, room = [0], limit - len(lines[0]) if lines else 0
    for n in range(1, len(lines)):
        if len(lines[n]) >= room:
            break
        chosen.append(n)
        room -= len(lines[n]) + 1
    return chosen if lines else []


def _with_gaps(chosen: Sequence[int], shown: Sequence[str], total: int) -> list[str]:
    out: list[str] = []
    previous = -1
    for n, line in zip(chosen, shown, strict=True):
        if n > previous + 1:
            out.append(GAP)
        out.append(line)
        previous = n
    if previous < total - 1:
        out.append(GAP)
    return out


def _window(line: str, pattern: re.Pattern[str] | None, limit: int) -> str:
    """The line, or a window of `limit` characters of it from a little before the first
    match (from its start when none is), marked with "…" where cut."""
    if len(line) <= limit:
        return line
    found = pattern.search(line.lower()) if pattern else None
    start = max(0, found.start() - limit // 7) if found else 0
    start = min(start, len(line) - limit)
    body = line[start : start + limit].strip()
    return (GAP if start > 0 else "") + body + (GAP if start + limit < len(line) else "")


def _lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def _scores(found: Sequence[set[str]], terms: Terms) -> list[float]:
    """Each line's weight: that of the distinct stems it holds."""
    return [sum(map(terms.stems.__getitem__, stems)) for stems in found]


def _found(lines: Sequence[str], terms: Terms) -> list[set[str]]:
    """The stems each line holds."""
    if terms.pattern is None:
        return [set() for _ in lines]
    findall = terms.pattern.findall
    return [set(findall(line.lower())) for line in lines]


def _telling(found: Sequence[set[str]], terms: Terms) -> list[float]:
    """Each line's weight in the stems that tell the lines apart: a stem every line holds
    (a speaker's name in each line of a conversation) says nothing about which to show."""
    everywhere = set.intersection(*found) if len(found) > 1 else set()
    return [sum(terms.stems[stem] for stem in stems - everywhere) for stems in found]


@lru_cache(maxsize=256)  # queries repeat (a retry, a test)
def _pattern(stems: tuple[str, ...]) -> re.Pattern[str] | None:
    """One pattern finding each stem at a word's start, longest first."""
    if not stems:
        return None
    return re.compile(r"\b(" + "|".join(re.escape(stem) for stem in stems) + ")")


def _stem(term: str) -> str:
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= _MIN_STEM:
            return term[: -len(suffix)]
    return term


def best_line(text: str, terms: Terms) -> str:
    """The line of `text` whose query terms weigh most ("" when none holds one)."""
    lines = _lines(text)
    scores = _scores(_found(lines, terms), terms)
    best = max(scores, default=0.0)
    return lines[scores.index(best)] if best > 0 else ""
