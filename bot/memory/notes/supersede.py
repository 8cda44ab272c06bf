"""Corrections: a newer fact about the same subject and attribute supersedes the older one.

A superseded MEMORY.md line stays in the file, as history a person can read and search find,
marked at its end with the day it stopped being true:

    - Ann lives in Lyon _(was, until 2026-11-20)_
    - Ann lives in Bergen

Only unmarked lines reach the prompt's `# Memory` (`current_lines`); the items made of a marked
line follow it (`bot.memory.items.truth`: status "superseded"). A person may add or delete the
mark by hand like any other text.

Which facts contradict is a rule for the obvious cases (`topic_of`): the same subject (I/my/me
are the user, as is a fact without a subject: "Lives in Lyon") and the same attribute — where
someone lives or moved to, where or as what they work, `<someone>'s <thing> is …` for things
that have one value at a time (`_ATTRIBUTE`: a birthday, an address, a favourite …), `… is on
<day>`. For the rest the model says what a fact replaces (consolidation's `replaced`, the
`memory_edit` tool's `supersedes`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date

from bot.memory.lines import bare, is_marked, marked, normal, unmarked, until_of

__all__ = [
    "current_lines",
    "kept_marks",
    "mark_replaced",
    "superseded_by",
    "topic_of",
    "unmarked",
    "until_of",
]

_USER = frozenset({"", "i", "me", "my", "user", "the user"})
_MOVES = re.compile(
    r"^(?P<s>.*?)\s*\b(?P<v>lives?|living|moved|has moved|relocated|is based|works?|working)"
    r"\s+(?P<p>in|to|at|for|as)\s+\S",
    re.I,
)
# attributes with one value at a time ("Ann's cat is black" says nothing about its name)
_ATTRIBUTE = (
    r"birthday|address|phone(?: number)?|e-?mail|job|employer|boss|partner|wife|husband|"
    r"boyfriend|girlfriend|name|age|favou?rite \w+|dentist|doctor|anniversary|deadline|"
    r"due date|home|city|country|time ?zone|salary|title|role"
)
_OWNS = re.compile(
    rf"^(?:(?P<my>my)|(?P<s>[\w .'-]+?)(?:'s|’s))\s+(?P<a>{_ATTRIBUTE})\s+(?:is|are)\s+\S",
    re.I,
)
_DAY = (
    r"\d|mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|"
    r"today|tomorrow|next"
)
_WHEN = re.compile(rf"^(?P<s>[\w .'-]+?)\s+(?:is|are)\s+(?:due\s+)?on\s+(?:{_DAY})", re.I)


def current_lines(lines: Iterable[str]) -> tuple[str, ...]:
    """The lines that are not superseded (what the prompt shows)."""
    return tuple(line for line in lines if not is_marked(line))


def topic_of(fact: str) -> tuple[str, str] | None:
    """(subject, attribute) of a fact the rule knows, or None."""
    text = " ".join(bare(fact).split())
    if found := _MOVES.match(text):
        verb, preposition = found["v"].lower(), found["p"].lower()
        attribute = f"work {preposition}" if verb.startswith("work") else "home"
        if attribute == "work for":
            attribute = "work at"
        return _subject(found["s"]), attribute
    if found := _OWNS.match(text):
        return ("user" if found["my"] else _subject(found["s"])), found["a"].lower().strip()
    if found := _WHEN.match(text):
        return _subject(found["s"]), "when"
    return None


def _subject(text: str) -> str:
    words = text.casefold().strip(" ,.-").split()
    if words and words[0] in ("the", "a", "an"):
        words = words[1:]
    subject = " ".join(words)
    return "user" if subject in _USER else subject


def superseded_by(
    lines: Sequence[str], facts: Sequence[str], *, named: Iterable[str] = ()
) -> list[int]:
    """The indexes of the current lines among `lines` that `facts` replace: same topic and
    another text, or named (`named`: lines the model said a fact replaces)."""
    topics = {topic for fact in facts if (topic := topic_of(fact)) is not None}
    news = {normal(fact) for fact in facts}
    names = {normal(line) for line in named}
    found = []
    for index, line in enumerate(lines):
        fact = normal(line)
        if not fact or fact.startswith("#") or is_marked(line) or fact in news:
            continue
        if fact in names or topic_of(fact) in topics - {None}:
            found.append(index)
    return found


def mark_replaced(
    text: str, facts: Sequence[str], until: date, *, named: Iterable[str] = ()
) -> tuple[str, list[str]]:
    """`text` with the lines `facts` replace marked; and those lines, as they were."""
    lines = text.splitlines(keepends=True)
    found = superseded_by([line.rstrip("\n") for line in lines], facts, named=named)
    before = [lines[at].rstrip("\n") for at in found]
    for at in found:
        lines[at] = marked(lines[at], until)
    return "".join(lines), before


def kept_marks(update: str, before: str) -> str:
    """`update` with a superseded line of `before` it wrote without its mark given the mark
    back (history the model copied unmarked is still history, not a new fact)."""
    marks = {normal(line): line.strip() for line in before.splitlines() if is_marked(line)}
    lines = update.splitlines(keepends=True)
    for at, line in enumerate(lines):
        old = marks.get(normal(line))
        if old is not None and not is_marked(line):
            indent = line[: len(line) - len(line.lstrip())]
            lines[at] = indent + old + ("\n" if line.endswith("\n") else "")
    return "".join(lines)
