"""Corrections that win without the model naming them (issue 36): the supersede rule
(`bot.memory.notes.claims`) on the paraphrased corrections of tests/test_corrections.py — each
pair a current fact and a later one that corrects it, or one about something else — and on what
people wrote: REALTALK's first-person sentences ("I …", "My …"), each checked against the same
speaker's earlier ones, every supersede it would make listed for a reader to judge.

    python -m benchmarks.corrections [eval-data/realtalk.json]

Exits 1 when the rule supersedes a fact of an unrelated pair, or recognises fewer than
`MIN_RECALL` of the corrections of the three sets together (tests/test_corrections.py asserts the
same).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import machine_line
from bot.memory.notes.claims import Claim, claim_of, contradicts
from tests.test_corrections import (
    CORRECTIONS,
    FRESH_CORRECTIONS,
    FRESH_UNRELATED,
    HELD_OUT_CORRECTIONS,
    HELD_OUT_UNRELATED,
    MIN_RECALL,
    UNRELATED,
)

Pair = tuple[str, str]
SETS: tuple[tuple[str, Sequence[Pair], Sequence[Pair]], ...] = (
    ("written with the rule", CORRECTIONS, UNRELATED),
    ("held out", HELD_OUT_CORRECTIONS, HELD_OUT_UNRELATED),
    ("fresh", FRESH_CORRECTIONS, FRESH_UNRELATED),
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|my)\b", re.I)


def supersedes(old: str, new: str) -> bool:
    before, after = claim_of(old), claim_of(new)
    return before is not None and after is not None and contradicts(before, after)


def measure(name: str, corrections: Sequence[Pair], unrelated: Sequence[Pair]) -> tuple[int, int]:
    """Print a set's figures; (corrections caught, unrelated pairs superseded)."""
    caught = sum(supersedes(*pair) for pair in corrections)
    wrong = sum(supersedes(*pair) for pair in unrelated)
    report(name, caught, len(corrections), wrong, len(unrelated))
    return caught, wrong


def report(name: str, caught: int, corrections: int, wrong: int, unrelated: int) -> None:
    precision = caught / (caught + wrong) if caught + wrong else 1.0
    print(
        f"{name:<22} corrections {caught:>2}/{corrections} recall {caught / corrections:.2f}  "
        f"unrelated superseded {wrong}/{unrelated} precision {precision:.2f}"
    )


def statements(path: Path) -> Iterator[tuple[str, list[str]]]:
    """Each speaker's first-person sentences, in the order they were said."""
    document = json.loads(path.read_text(encoding="utf-8"))
    for chat in document["conversations"]:
        said: dict[str, list[str]] = {}
        for session in chat["sessions"]:
            for turn in session["turns"]:
                sentences = _SENTENCE.split(" ".join(str(turn["text"]).split()))
                said.setdefault(turn["speaker"], []).extend(
                    s for s in sentences if _FIRST_PERSON.match(s)
                )
        for speaker, lines in said.items():
            yield f"{chat['id']}/{speaker}", lines


def realtalk(path: Path) -> None:
    sentences = read = 0
    events: list[tuple[str, str, str]] = []
    for who, lines in statements(path):
        earlier: list[tuple[str, Claim]] = []
        for line in lines:
            sentences += 1
            claim = claim_of(line)
            if claim is None:
                continue
            read += 1
            events += [(who, old, line) for old, was in earlier if contradicts(was, claim)]
            earlier.append((line, claim))
    print(
        f"REALTALK: {sentences} first-person sentences, {read} read as a claim, "
        f"{len(events)} would supersede an earlier one" + (":" if events else ".")
    )
    for who, old, new in events:
        print(f"  {who}: “{old}” → “{new}”")


def main(argv: Sequence[str]) -> int:
    print(machine_line())
    found = [measure(name, corrections, unrelated) for name, corrections, unrelated in SETS]
    caught, wrong = sum(c for c, _ in found), sum(w for _, w in found)
    total, pairs = sum(len(s[1]) for s in SETS), sum(len(s[2]) for s in SETS)
    report("together", caught, total, wrong, pairs)
    if argv:
        realtalk(Path(argv[0]))
    return 0 if wrong == 0 and caught / total >= MIN_RECALL else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
