"""Corrections: a newer fact about the same subject and attribute supersedes the older one.

A superseded MEMORY.md line stays in the file, as history a person can read and search find,
marked at its end with the day it stopped being true:

    - Ann lives in Lyon _(was, until 2026-11-20)_
    - Ann lives in Bergen

Only unmarked lines reach the prompt's `# Memory` (`current_lines`); the items made of a marked
line follow it (`bot.memory.items.truth`: status "superseded"). A person may add or delete the
mark by hand like any other text.

Which facts contradict is one general rule, whoever wrote the lines (`claims`): a fact's
subject and relation (an attribute, or what its verb says) from its words; a newer fact with the
same key and another value of a relation that holds one value at a time, one that says the same
relation no longer holds, or one that names the old value as displaced ("tea instead of
coffee") corrects it. docs/memory.md states it, with its measure. For the rest the model says
what a fact replaces (consolidation's `replaced`, the `memory_edit` tool's `supersedes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date

from bot.memory.lines import is_marked, marked, normal, unmarked, until_of
from bot.memory.notes.claims import Claim, claim_of, contradicts

__all__ = [
    "current_lines",
    "kept_marks",
    "mark_replaced",
    "replaced_of",
    "superseded_by",
    "topic_of",
    "unmarked",
    "until_of",
]


def current_lines(lines: Iterable[str]) -> tuple[str, ...]:
    """The lines that are not superseded (what the prompt shows)."""
    return tuple(line for line in lines if not is_marked(line))


def topic_of(fact: str) -> tuple[str, str] | None:
    """(subject, relation) of a fact the rule reads (`claims`), or None."""
    claim = claim_of(fact)
    return None if claim is None else claim.key


def superseded_by(
    lines: Sequence[str], facts: Sequence[str], *, named: Iterable[str] = ()
) -> list[int]:
    """The indexes of the current lines among `lines` that `facts` correct (`claims`: the
    same subject and relation, another value), or that are named (`named`: lines the model
    said a fact replaces) — whoever wrote them."""
    claims = [claim for fact in facts if (claim := claim_of(fact)) is not None]
    news = {normal(fact) for fact in facts}
    names = {normal(line) for line in named}
    found = []
    for index, line in enumerate(lines):
        fact = normal(line)
        if not fact or fact.startswith("#") or is_marked(line) or fact in news:
            continue
        if fact in names or _corrected(fact, claims):
            found.append(index)
    return found


def _corrected(fact: str, claims: Sequence[Claim]) -> bool:
    old = claim_of(fact)
    return old is not None and any(contradicts(old, new) for new in claims)


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


def replaced_of(lines: Sequence[str]) -> dict[int, list[int]]:
    """For each current line the rule gives a topic, the marked lines of that topic: what it
    superseded (the memory page shows them under it)."""
    marked_lines: dict[tuple[str, str], list[int]] = {}
    for index, line in enumerate(lines):
        if is_marked(line) and (topic := topic_of(line)) is not None:
            marked_lines.setdefault(topic, []).append(index)
    found: dict[int, list[int]] = {}
    for index, line in enumerate(lines):
        topic = None if is_marked(line) else topic_of(line)
        if topic is not None and topic in marked_lines:
            found[index] = marked_lines[topic]
    return found
