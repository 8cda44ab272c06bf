"""The evaluation dataset: a valid file loads; every kind of mistake names its field."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigError, DatasetError
from bot.eval.dataset import load_dataset, parse_dataset

EVALSET = Path(__file__).resolve().parent / "data" / "evalset.json"
VALID: dict[str, Any] = {
    "conversations": [
        {
            "id": "home",
            "sessions": [
                {
                    "id": "s1",
                    "date": "2026-03-02",
                    "turns": [
                        {"id": "t1", "speaker": "user", "text": "The vet is on Friday."},
                        {"id": "t2", "speaker": "assistant", "text": "Noted."},
                    ],
                }
            ],
        }
    ],
    "questions": [
        {
            "conversation": "home",
            "question": "When is the vet?",
            "evidence": ["t1"],
            "category": "temporal",
        }
    ],
}


def changed(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    raw = copy.deepcopy(VALID)
    edit(raw)
    return raw


def turn(raw: dict[str, Any], n: int) -> dict[str, Any]:
    turns: list[dict[str, Any]] = raw["conversations"][0]["sessions"][0]["turns"]
    return turns[n]


TURN = "conversations[0].sessions[0].turns"
MISTAKES: list[tuple[Callable[[dict[str, Any]], None], str]] = [
    (lambda r: r.pop("conversations"), "conversations: expected a non-empty list, got nothing"),
    (lambda r: r.update(questions=[]), "questions: expected a non-empty list, got an empty list"),
    (lambda r: r["conversations"].append("c2"), "conversations[1]: expected an object, got str"),
    (
        lambda r: r["conversations"].append(copy.deepcopy(r["conversations"][0])),
        "conversations: id 'home' appears twice",
    ),
    (
        lambda r: r["conversations"][0]["sessions"][0].update(date="2 March"),
        "conversations[0].sessions[0].date: expected YYYY-MM-DD, got '2 March'",
    ),
    (
        lambda r: turn(r, 1).update(speaker="bot"),
        f'{TURN}[1].speaker: expected "user" or "assistant", got \'bot\'',
    ),
    (
        lambda r: turn(r, 0).update(text="  "),
        f"{TURN}[0].text: expected a non-empty string, got an empty string",
    ),
    (lambda r: turn(r, 0).update(id=7), f"{TURN}[0].id: expected a non-empty string, got int"),
    (
        lambda r: turn(r, 1).update(id="t1"),
        "conversations[0].sessions[*].turns: id 't1' appears twice",
    ),
    (
        lambda r: r["questions"][0].update(conversation="work"),
        "questions[0].conversation: no conversation 'work'",
    ),
    (
        lambda r: r["questions"][0].update(evidence=["t1", "t9"]),
        "questions[0].evidence[1]: no turn 't9' in 'home'",
    ),
    (
        lambda r: r["questions"][0].update(evidence=["t1", "t1"]),
        "questions[0].evidence: turn id 't1' appears twice",
    ),
    (
        lambda r: r["questions"][0].pop("category"),
        "questions[0].category: expected a non-empty string, got nothing",
    ),
    (
        lambda r: r["conversations"][0].update(speakers={"user": "Ann", "bot": "Mnemo"}),
        'conversations[0].speakers: expected "user" or "assistant", got \'bot\'',
    ),
    (
        lambda r: r["conversations"][0].update(speakers={"user": ""}),
        "conversations[0].speakers.user: expected a non-empty string, got an empty string",
    ),
    (
        lambda r: r["questions"][0].update(date="last week"),
        "questions[0].date: expected YYYY-MM-DD, got 'last week'",
    ),
]


def test_a_valid_dataset_loads() -> None:
    dataset = parse_dataset(VALID)
    [conversation] = dataset.conversations
    assert conversation.sessions[0].day == date(2026, 3, 2)
    assert [t.speaker for t in conversation.turns] == ["user", "assistant"]
    assert dataset.questions[0].evidence == ("t1",)
    assert dataset.questions[0].asked is None


def test_a_conversation_may_name_its_speakers() -> None:
    [unnamed] = parse_dataset(VALID).conversations
    named = parse_dataset(
        changed(lambda r: r["conversations"][0].update(speakers={"user": "Ann", "assistant": "Bo"}))
    ).conversations[0]
    assert (unnamed.name_of("user"), named.name_of("user"), named.name_of("assistant")) == (
        None,
        "Ann",
        "Bo",
    )


def test_a_question_may_say_the_day_it_is_asked() -> None:
    dated = parse_dataset(changed(lambda r: r["questions"][0].update(date="2026-03-09")))
    assert dated.questions[0].asked == date(2026, 3, 9)


def test_a_question_may_give_its_answer() -> None:
    given = parse_dataset(changed(lambda r: r["questions"][0].update(answer="On Tuesday.")))
    assert (parse_dataset(VALID).questions[0].answer, given.questions[0].answer) == (
        None,
        "On Tuesday.",
    )


@pytest.mark.parametrize(("edit", "message"), MISTAKES)
def test_a_mistake_names_the_field(edit: Callable[[dict[str, Any]], None], message: str) -> None:
    with pytest.raises(DatasetError) as caught:
        parse_dataset(changed(edit))
    assert str(caught.value) == message


def test_a_file_that_is_not_json_says_so(tmp_path: Path) -> None:
    path = tmp_path / "set.json"
    path.write_text('{"conversations": [')
    with pytest.raises(ConfigError, match=r"set\.json: not JSON \(Expecting value at line 1\)"):
        load_dataset(path)
    with pytest.raises(ConfigError, match="cannot read it"):
        load_dataset(tmp_path / "missing.json")


def test_the_shipped_evalset_is_what_the_issue_asks_for() -> None:
    dataset = load_dataset(EVALSET)
    assert len(dataset.conversations) >= 4
    for conversation in dataset.conversations:
        assert len({session.day for session in conversation.sessions}) >= 2
        assert len(conversation.turns) >= 30
    assert len(dataset.questions) >= 30
    assert len({question.category for question in dataset.questions}) >= 3
    assert json.loads(EVALSET.read_text())  # plain JSON, nothing else
