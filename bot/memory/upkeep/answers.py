"""Reading the consolidation model's JSON answer, however it arrives (three tiers).

1. Strip markdown fences and parse the whole text.
2. Else parse the first balanced `{…}` block that is a JSON object (strings respected).
3. Else pick out the `"history_entry"` / `"memory_update"` values one by one: a closed string
   or a closed list (a small model's answer cut short while it wrote the other field).

Real small models answer loosely, so the values are read loosely too, and always end as plain
text: a list is its items one a line (as `- item` lines for `memory_update`), an object its keys
as `## key` headings over their values, and fence lines (```` ```markdown ````) inside a value
are dropped — a fence never reaches MEMORY.md or HISTORY; nor does a line of the request echoed
back (a heading, `## Current Long-term Memory`, the empty memory's `(empty)`, as Qwen2.5 1.5B
did, or a forgotten message's mark), nor a line of only JSON
punctuation (`{`, `- }`: what is left of an answer cut short). A number, `null` or an empty
value is missing, so a malformed answer can never blank out `MEMORY.md`. `removed` (optional)
lists the MEMORY.md lines the model means to drop, `replaced` (optional) those a newer fact of
the update replaces (kept as history, marked superseded); consolidation keeps any other line it
leaves out.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.memory.lines import bare, bullet_of, normal
from bot.memory.upkeep.requests import PROMPT_ECHOES
from bot.models import ChatMessage

FIELDS = ("history_entry", "memory_update")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_FENCE_LINE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
_PUNCTUATION_LINE = re.compile(r"^[\s\-*+]*[{}\[\],:\"]+[\s,]*$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}


@dataclass(frozen=True)
class ConsolidationResult:
    history_entry: str | None
    memory_update: str | None
    removed: tuple[str, ...] = ()  # MEMORY.md lines the model says it drops on purpose
    replaced: tuple[str, ...] = ()  # MEMORY.md lines a newer fact of the update replaces

    @property
    def is_empty(self) -> bool:
        return self.history_entry is None and self.memory_update is None


def parse_consolidation(text: str) -> ConsolidationResult:
    """The two fields from a model answer; both None when it holds no usable JSON."""
    whole = _whole(text)
    for document in itertools.chain([whole] if whole is not None else [], _objects(text)):
        if not (result := _result(document)).is_empty:
            return result
    return ConsolidationResult(
        history_entry=_field(text, "history_entry"), memory_update=_field(text, "memory_update")
    )


def _whole(text: str) -> dict[str, Any] | None:
    fenced = _FENCE.search(text)
    return _as_object((fenced[1] if fenced else text).strip())


def _as_object(candidate: str) -> dict[str, Any] | None:
    try:
        value = json.loads(candidate, strict=False)  # raw newlines inside strings are common
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _objects(text: str) -> Iterator[dict[str, Any]]:
    """Every balanced `{…}` block that parses as a JSON object, in order."""
    start = text.find("{")
    while start != -1:
        end = _block_end(text, start)
        if end is not None and (found := _as_object(text[start:end])) is not None:
            yield found
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)


def _block_end(text: str, start: int, *, brackets: str = "{}") -> int | None:
    """Index just past the `}` (the closing bracket) that closes the `{` at `start`, by depth;
    strings skipped."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if escaped:
            escaped = False
        elif in_string:
            escaped = char == "\\"
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in brackets:
            depth += 1 if char == brackets[0] else -1
            if depth == 0:
                return index + 1
    return None


def _result(document: dict[str, Any]) -> ConsolidationResult:
    entry = _text(document.get("history_entry"), bullets=False)
    update = _text(document.get("memory_update"), bullets=True)
    removed = _text(document.get("removed"), bullets=False) or ""
    replaced = _text(document.get("replaced"), bullets=False) or ""
    return ConsolidationResult(
        entry,
        update,
        tuple(removed.splitlines()) if update else (),
        tuple(replaced.splitlines()) if update else (),
    )


def _text(value: object, *, bullets: bool) -> str | None:
    """`value` as plain text (see the module's docstring), or None when it holds none."""
    return _unfenced(_lines(value, bullets=bullets))


def _lines(value: object, *, bullets: bool) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        items = (_lines(item, bullets=bullets).strip() for item in value)
        return "\n".join(_bullet(item) if bullets else item for item in items if item)
    if isinstance(value, dict):
        parts = [f"## {key}\n{_lines(inner, bullets=True).strip()}" for key, inner in value.items()]
        return "\n\n".join(parts)
    return ""


def _bullet(item: str) -> str:
    return item if item.startswith("#") or bullet_of(item) else f"- {item}"


def _unfenced(text: str) -> str | None:
    kept = [
        line
        for line in text.splitlines()
        if not _FENCE_LINE.match(line)
        and not _PUNCTUATION_LINE.match(line)
        and bare(line).casefold() not in PROMPT_ECHOES
    ]
    return "\n".join(kept).strip() or None


def _field(text: str, name: str) -> str | None:
    """A field's value found by pattern: a complete, closed string, or a closed list (an
    answer cut short keeps each field that was whole before the cut)."""
    match = re.search(rf'"{name}"\s*:\s*"((?:[^"\\]|\\.)*)"', text, re.DOTALL)
    if match is not None:
        return _unfenced(_unescape(match[1]))
    opened = re.search(rf'"{name}"\s*:\s*\[', text)
    if opened is None:
        return None
    end = _block_end(text, opened.end() - 1, brackets="[]")
    if end is None:
        return None
    try:
        value = json.loads(text[opened.end() - 1 : end], strict=False)
    except ValueError:
        return None
    return _text(value, bullets=name == "memory_update")


def _unescape(raw: str) -> str:
    try:
        value = json.loads(f'"{raw}"', strict=False)
    except ValueError:
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[0]), raw, flags=re.DOTALL)
    return str(value)


_TRANSCRIPT = re.compile(
    r"^\W*(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}\W*)?(?:USER|ASSISTANT)(?:\s*\[[^\]]*\])?\s*:",
    re.IGNORECASE,
)  # a line in the form `requests.conversation_lines` writes (the label in any case)
_LABEL = re.compile(r"\b(?:USER|ASSISTANT)(?:\s*\[[^\]]*\])?\s*:", re.IGNORECASE)
_QUOTE_WORDS = 6  # a history line holding a message of this many words or more copies it
_COPY_WORDS = 4  # a new memory line of this many words or more found in a message is a copy
_WORD = re.compile(r"[^\W\d_]{3,}")
_STEM = 5  # letters a word is compared by
_ABOUT_USER = re.compile(r"^(?:the\s+)?(?:user\b|i\b|my\b|i'm\b|i’m\b)", re.IGNORECASE)
_ROLES = ("user", "assistant")


def facts_only(
    answer: ConsolidationResult, messages: Sequence[ChatMessage], *, seen: str
) -> ConsolidationResult:
    """The answer without what is not a fact (the writer's rules, stated in docs/memory.md),
    checked on the lines it adds to what the model was shown (`seen`: hand edits are never
    touched):

    - a line in the conversation's own form (`[time] USER: …`): the request echoed;
    - a line that copies the assistant's words (at least `_COPY_WORDS` words of an ASSISTANT
      message, verbatim, that no USER message holds): they are never a fact about the user;
    - a fact about the user (`User …`, `I …`, `My …`) that the user's words do not ground:
      none of the words of what it says (after its `kind:` label) is in a USER message, or its
      distinctive words (those only one side of the conversation used) are all the assistant's;
    - a line that repeats a fact already in the update (the same normal form, any bullet:
      `bot.memory.lines.normal`).

    The history entry loses the lines that copy the conversation (`_transcript`); an entry or
    update left with nothing is missing (the raw fallback then keeps the last messages, marked
    as such, instead of a copy passed off as a summary)."""
    said = {role: [_said(m.content or "") for m in messages if m.role == role] for role in _ROLES}
    known = {normal(line) for line in seen.splitlines() if bare(line)}
    kept: list[str] = []
    facts: set[str] = set()
    for line in (answer.memory_update or "").splitlines():
        fact = normal(line)
        if fact and not fact.startswith("#") and fact not in known:
            if _TRANSCRIPT.match(bare(line)) or fact in facts or _theirs(fact, said):
                continue
            facts.add(fact)
        kept.append(line)
    history = (answer.history_entry or "").splitlines()
    entry = "\n".join(line for line in history if not _transcript(line, said)).strip()
    update = "\n".join(kept).strip()
    return replace(
        answer,
        history_entry=entry or None,
        memory_update=update or None,
    )


def _said(text: str) -> str:
    """A message as the rules compare it: each of its lines in normal form, one a line."""
    return "\n".join(normal(line) for line in text.splitlines() if line.strip())


def _transcript(line: str, said: dict[str, list[str]]) -> bool:
    """Whether a history entry's line is the conversation copied, not told in the model's own
    words: it holds a message's label (`USER:`, any case) or a whole message, or a whole line
    of one, of `_QUOTE_WORDS` words or more, verbatim."""
    if _LABEL.search(line):
        return True
    text = normal(line)
    return any(
        len(part.split()) >= _QUOTE_WORDS and part in text
        for messages in said.values()
        for message in messages
        for part in (message, *message.split("\n"))
    )


def _theirs(fact: str, said: dict[str, list[str]]) -> bool:
    """Whether a new fact is not the user's to keep (see `facts_only`): a copy of the
    assistant's words, or a fact about the user that nothing the user said grounds."""
    flat = {role: [" ".join(text.split()) for text in texts] for role, texts in said.items()}
    if len(fact.split()) >= _COPY_WORDS and any(fact in text for text in flat["assistant"]):
        return not any(fact in text for text in flat["user"])
    if not _ABOUT_USER.match(fact):
        return False
    _, colon, value = fact.partition(":")
    mine = _stems(value if colon else fact.split(None, 1)[-1])
    user = {stem for text in said["user"] for stem in _stems(text)}
    assistant = {stem for text in said["assistant"] for stem in _stems(text)}
    if mine and not mine & user:
        return True  # invented, or the assistant's
    distinctive = {stem for stem in mine if (stem in user) != (stem in assistant)}
    return bool(distinctive) and distinctive <= assistant


def _stems(text: str) -> set[str]:
    """A text's words of three letters or more, each by its first five (`reading` and `read`,
    `books` and `book` are one)."""
    return {word[:_STEM] for word in _WORD.findall(text.casefold())}
