"""The retrieval evaluation dataset: its format, loaded and validated once, at the edge.

    {"conversations": [{"id", "speakers"?: {"user": name, "assistant": name},
                        "sessions": [{"id", "date", "turns": [{"id", "speaker", "text"}]}]}],
     "questions": [{"conversation", "question", "evidence": [turn ids], "category", "date"?}]}

`date` is `YYYY-MM-DD` (a question's is optional: the day it is asked, what "last May" in it is
read against; without one, the day it is run); `speaker` is "user" or "assistant"; `speakers`
(optional) names them: two people talking, each turn is then stored as a group's message is,
`Name: text` (`bot.eval.corpus`); turn ids are unique within their conversation, and a
question's evidence names turns of its own conversation. Every problem is a `DatasetError`
naming the field, e.g. `conversations[1].sessions[0].turns[3].speaker`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Literal, TypeVar, cast

from bot.errors import DatasetError

Speaker = Literal["user", "assistant"]
SPEAKERS: tuple[Speaker, ...] = ("user", "assistant")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Turn:
    id: str
    speaker: Speaker
    text: str


@dataclass(frozen=True)
class Session:
    id: str
    day: date
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Conversation:
    id: str
    sessions: tuple[Session, ...]
    names: tuple[tuple[Speaker, str], ...] = ()  # who each speaker is ("speakers"), if said

    def name_of(self, speaker: Speaker) -> str | None:
        return dict(self.names).get(speaker)

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(turn for session in self.sessions for turn in session.turns)


@dataclass(frozen=True)
class Question:
    conversation: str  # a conversation id
    text: str
    evidence: tuple[str, ...]  # turn ids of that conversation
    category: str
    asked: date | None = None  # the day it is asked ("date"), if the dataset says
    answer: str | None = None  # the gold answer ("answer"), if the dataset gives one


@dataclass(frozen=True)
class Dataset:
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]


def load_dataset(path: Path) -> Dataset:
    """Read and validate a dataset file."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    return parse_dataset(raw)


def parse_dataset(raw: object) -> Dataset:
    """A dataset from decoded JSON; a `DatasetError` names the first bad field."""
    top = _object(raw, "dataset")
    conversations = _items(top, "conversations", "", _conversation)
    _unique((c.id for c in conversations), "conversations", "id")
    known = {c.id: {t.id for t in c.turns} for c in conversations}
    questions = _items(top, "questions", "", lambda item, where: _question(item, where, known))
    return Dataset(conversations, questions)


def _conversation(raw: object, where: str) -> Conversation:
    item = _object(raw, where)
    conversation = Conversation(
        _text(item, "id", where), _items(item, "sessions", where, _session), _names(item, where)
    )
    _unique((t.id for t in conversation.turns), f"{where}.sessions[*].turns", "id")
    _unique((s.id for s in conversation.sessions), f"{where}.sessions", "id")
    return conversation


def _names(item: dict[str, object], where: str) -> tuple[tuple[Speaker, str], ...]:
    if "speakers" not in item:
        return ()
    names = _object(item["speakers"], _at(where, "speakers"))
    for speaker in names:
        if speaker not in SPEAKERS:
            raise DatasetError(f'{where}.speakers: expected "user" or "assistant", got {speaker!r}')
    return tuple((s, _text(names, s, _at(where, "speakers"))) for s in SPEAKERS if s in names)


def _session(raw: object, where: str) -> Session:
    item = _object(raw, where)
    day = _day(_text(item, "date", where), where)
    return Session(_text(item, "id", where), day, _items(item, "turns", where, _turn))


def _day(text: str, where: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise DatasetError(f"{where}.date: expected YYYY-MM-DD, got {text!r}") from None


def _turn(raw: object, where: str) -> Turn:
    item = _object(raw, where)
    speaker = _text(item, "speaker", where)
    if speaker not in SPEAKERS:
        raise DatasetError(f'{where}.speaker: expected "user" or "assistant", got {speaker!r}')
    return Turn(_text(item, "id", where), speaker, _text(item, "text", where))


def _question(raw: object, where: str, known: dict[str, set[str]]) -> Question:
    item = _object(raw, where)
    conversation = _text(item, "conversation", where)
    if conversation not in known:
        raise DatasetError(f"{where}.conversation: no conversation {conversation!r}")
    evidence = _items(item, "evidence", where, _string)
    _unique(evidence, f"{where}.evidence", "turn id")
    for n, turn_id in enumerate(evidence):
        if turn_id not in known[conversation]:
            raise DatasetError(f"{where}.evidence[{n}]: no turn {turn_id!r} in {conversation!r}")
    text, category = _text(item, "question", where), _text(item, "category", where)
    asked = _day(_text(item, "date", where), where) if "date" in item else None
    answer = _text(item, "answer", where) if "answer" in item else None
    return Question(conversation, text, evidence, category, asked, answer)


# ---------------------------------------------------------------------- field readers


def _object(raw: object, where: str) -> dict[str, object]:
    if not isinstance(raw, dict):
        raise DatasetError(f"{where or 'dataset'}: expected an object, got {_kind(raw)}")
    return cast(dict[str, object], raw)


def _text(item: dict[str, object], key: str, where: str) -> str:
    return _string(item.get(key), _at(where, key))


def _string(raw: object, where: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise DatasetError(f"{where}: expected a non-empty string, got {_kind(raw)}")
    return raw


def _items(
    item: dict[str, object], key: str, where: str, read: Callable[[object, str], _T]
) -> tuple[_T, ...]:
    """The non-empty list at `key`, each element read by `read(element, its field path)`."""
    raw, path = item.get(key), _at(where, key)
    if not isinstance(raw, list) or not raw:
        raise DatasetError(f"{path}: expected a non-empty list, got {_kind(raw)}")
    return tuple(read(element, f"{path}[{n}]") for n, element in enumerate(raw))


def _unique(ids: Iterable[str], where: str, key: str) -> None:
    seen: set[str] = set()
    for value in ids:
        if value in seen:
            raise DatasetError(f"{where}: {key} {value!r} appears twice")
        seen.add(value)


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _kind(raw: object) -> str:
    if raw is None:
        return "nothing"
    if isinstance(raw, str) and not raw.strip():
        return "an empty string"
    if isinstance(raw, list) and not raw:
        return "an empty list"
    return type(raw).__name__
