"""benchmarks/recall_misses.py: each evidence turn is counted in the one place it is lost."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np
import pytest

from benchmarks.recall_misses import NEAREST, PLACES, ceiling, places
from bot.eval.dataset import Conversation, Dataset, Question, Session, Turn
from bot.eval.report import Answer, Retrieved, Section
from bot.index.embedding import Vectors, normalised


def test_each_evidence_turn_is_shown_found_or_not_found_with_or_without_a_shared_word() -> None:
    turns = (
        Turn("D1:1", "user", "I love skiing in Aspen"),
        Turn("D1:2", "assistant", "The bar in Miami was lovely"),
        Turn("D1:3", "assistant", "Kate, Aspen again next winter?"),
        Turn("D1:4", "assistant", "I'm taking a cooking class"),
    )
    chat = Conversation("c", (Session("s1", date(2024, 1, 1), turns),), (("user", "Kate"),))
    question = Question("c", "Where does Kate go skiing?", ("D1:1", "D1:2", "D1:3", "D1:4"), "hop")
    shown = Retrieved("I love skiing in Aspen", frozenset({"D1:1"}))
    found = Retrieved("the bar in Miami", frozenset({"D1:2"}))
    answer = Answer(question, (shown, found), 0.0, Section("# Relevant Memory", (shown,)))

    counted = places(Dataset((chat,), (question,)), [answer])

    assert counted["hop", "turns"] == 4
    assert [counted["hop", place] for place in PLACES] == [
        1,
        1,
        0,
        2,
    ]  # "Kate" is a speaker: no word


def test_a_turn_sharing_a_word_with_the_question_is_told_apart() -> None:
    turns = (Turn("D1:1", "user", "Skiing in Vail, finally"),)
    chat = Conversation("c", (Session("s1", date(2024, 1, 1), turns),))
    question = Question("c", "Where did they go skiing?", ("D1:1",), "hop")
    answer = Answer(question, (), 0.0, Section("", ()))

    counted = places(Dataset((chat,), (question,)), [answer])

    assert counted["hop", PLACES[2]] == 1


class _Words:
    """An embedder of fixed word axes: a turn is near a question that names its words."""

    name = "words"
    dim = 3
    _axes = ("ski", "cook", "bar")

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = [[float(axis in text.lower()) for axis in self._axes] for text in texts]
        return normalised(np.array(rows, dtype=np.float32))


def test_the_ceiling_adds_the_embedders_nearest_turns_to_what_the_section_showed() -> None:
    turns = tuple(Turn(f"D1:{n}", "user", f"small talk {n}") for n in range(1, 120))
    turns += (Turn("D1:200", "user", "Skiing today"), Turn("D1:201", "user", "A cooking class"))
    chat = Conversation("c", (Session("s1", date(2024, 1, 1), turns),), (("user", "Kate"),))
    question = Question("c", "Does Kate ski or cook?", ("D1:5", "D1:200", "D1:201"), "hop")
    shown = Retrieved("small talk 5", frozenset({"D1:5"}))
    answer = Answer(question, (shown,), 0.0, Section("# Relevant Memory", (shown,)))

    lines = ceiling(Dataset((chat,), (question,)), [answer], _Words())

    marks = [float(mark) for mark in lines[-1].split()[2:]]
    # the section; then nearest N and section + nearest N for each N in NEAREST
    assert marks == pytest.approx([1 / 3] + [2 / 3, 1.0] * len(NEAREST), abs=1e-3)
