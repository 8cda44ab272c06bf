"""benchmarks/recall_misses.py: each evidence turn is counted in the one place it is lost."""

from __future__ import annotations

from datetime import date

from benchmarks.recall_misses import PLACES, places
from bot.eval.dataset import Conversation, Dataset, Question, Session, Turn
from bot.eval.report import Answer, Retrieved, Section


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
