"""Statements: the sentences of a user's message that say something durable about them.

Heuristic cue phrases, one kind per sentence (the first cue that matches wins):

- **fact**, explicit: "remember that …", "don't forget …", "note that …"
- **preference**: "I prefer / like / love / enjoy / hate / dislike / don't like / want …",
  "my favourite …", and "… prefers / likes / hates …" (facts written by the model)
- **constraint**: a sentence starting with "always", "never", "don't", "do not", "please
  always/never/don't", or holding "you must / should never / must not"
- **fact**: "my <noun> is …", "I am a …", "I'm an …", "I live / work / use …"

Questions are never statements. Each becomes an episodic item; saying the same thing again
reinforces it until it is promoted to semantic memory (see `items`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_CHARS = 8
MAX_CHARS = 300
EXPLICIT_CONFIDENCE = 0.8  # "remember that …": promoted at once
STATED_CONFIDENCE = 0.5  # said once; said twice it reaches 0.75
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_CUES: tuple[tuple[str, float, re.Pattern[str]], ...] = (
    ("fact", EXPLICIT_CONFIDENCE, re.compile(r"\b(?:remember|don't forget|note) that\b", re.I)),
    (
        "preference",
        STATED_CONFIDENCE,
        re.compile(
            r"\bI (?:really |do not |don't )?(?:prefer|like|love|enjoy|hate|dislike|want)\b"
            r"|\bmy favou?rite\b|\b(?:prefers|likes|loves|enjoys|hates|dislikes)\b",
            re.I,
        ),
    ),
    (
        "constraint",
        STATED_CONFIDENCE,
        re.compile(
            r"^(?:please )?(?:always|never|don't|do not)\b"
            r"|\byou (?:must|should never|must not|mustn't)\b",
            re.I,
        ),
    ),
    (
        "fact",
        STATED_CONFIDENCE,
        re.compile(
            r"\bmy [\w']+(?: \w+)? is\b"
            r"|\bI(?: am|'m) an? \w|\bI (?:live|work|use) \w",
            re.I,
        ),
    ),
)


@dataclass(frozen=True)
class Statement:
    type: str  # "fact", "preference" or "constraint"
    text: str
    confidence: float


def find_statements(text: str) -> list[Statement]:
    found: list[Statement] = []
    for match in _SENTENCE.finditer(text):
        sentence = " ".join(match[0].split())
        if not MIN_CHARS <= len(sentence) <= MAX_CHARS or sentence.endswith("?"):
            continue
        if cue := _cue(sentence):
            found.append(Statement(cue[0], sentence, cue[1]))
    return found


def kind_of(text: str) -> str:
    """What a stated fact is: "preference", "constraint", or (by default) "fact"."""
    cue = _cue(" ".join(text.split()))
    return "fact" if cue is None else cue[0]


def _cue(sentence: str) -> tuple[str, float] | None:
    for kind, confidence, pattern in _CUES:
        if pattern.search(sentence):
            return kind, confidence
    return None
