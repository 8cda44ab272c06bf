"""The synthetic evalset: regenerable, valid, and built as its docstring says."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, date, datetime, time
from pathlib import Path

from benchmarks.evalsets.synthetic import generate, main
from bot.eval.dataset import Dataset, load_dataset, parse_dataset
from bot.eval.retrieval import asked_at
from bot.index.when import resolve
from tests.harness import REPO

SHIPPED = REPO / "tests" / "data" / "evalset_months.json"
CATEGORIES = {
    "single-hop",
    "multi-hop",
    "temporal",
    "open-domain",
    "knowledge-update",
    "temporal-dated",
    "people",
}


def test_the_shipped_file_is_what_the_generator_makes(tmp_path: Path) -> None:
    made = tmp_path / "made.json"
    assert main([str(made)]) == 0
    assert made.read_bytes() == SHIPPED.read_bytes()
    assert SHIPPED.stat().st_size < 2_000_000


def test_another_seed_makes_another_valid_dataset() -> None:
    other = parse_dataset(generate(seed=7, conversations=2))
    assert len(other.conversations) == 2
    assert generate(seed=7, conversations=2) == generate(seed=7, conversations=2)
    assert generate(seed=7, conversations=2) != generate(seed=8, conversations=2)


def test_months_of_sessions_two_named_people_and_hundreds_of_questions() -> None:
    dataset = load_dataset(SHIPPED)
    raw = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert len(dataset.questions) >= 300
    counts = Counter(q.category for q in dataset.questions)
    assert set(counts) == CATEGORIES and min(counts.values()) >= 50
    for conversation, spoken in zip(dataset.conversations, raw["conversations"], strict=True):
        days = [s.day for s in conversation.sessions]
        assert days == sorted(days) and (days[-1] - days[0]).days >= 120
        assert spoken["speakers"]["user"] != spoken["speakers"]["assistant"]


def test_multi_hop_evidence_lies_in_two_sessions_and_updates_cite_the_later_turn() -> None:
    dataset = load_dataset(SHIPPED)
    session_of = {
        turn.id: (c.id, n)
        for c in dataset.conversations
        for n, s in enumerate(c.sessions)
        for turn in s.turns
    }
    for question in dataset.questions:
        sessions = [session_of[turn][1] for turn in question.evidence]
        if question.category == "multi-hop":
            assert len(set(sessions)) == 2, question
        if question.category == "knowledge-update" and len(sessions) == 2:
            assert sessions[0] < sessions[1], question


def _days_of(dataset: Dataset) -> dict[tuple[str, str], date]:
    return {
        (c.id, turn.id): session.day
        for c in dataset.conversations
        for session in c.sessions
        for turn in session.turns
    }


def test_a_dated_question_names_the_time_of_its_evidence_from_the_day_it_is_asked() -> None:
    for dataset in (load_dataset(SHIPPED), parse_dataset(generate(seed=7, conversations=4))):
        day_of = _days_of(dataset)
        dated = [q for q in dataset.questions if q.category == "temporal-dated"]
        assert len(dated) >= 30
        for question in dataset.questions:
            assert (question.asked is not None) == (question in dated), question
            if question.asked is None:
                continue
            window = resolve(question.text, asked_at(question) or datetime.now(UTC)).window
            assert window is not None, question
            for turn in question.evidence:
                told = datetime.combine(day_of[question.conversation, turn], time(9), UTC)
                assert window.holds(told.timestamp()), (question, window)
                assert question.asked > told.date()


def test_people_questions_name_someone_the_conversation_mentions() -> None:
    dataset = load_dataset(SHIPPED)
    text_of = {(c.id, t.id): t.text for c in dataset.conversations for t in c.turns}
    people = [q for q in dataset.questions if q.category == "people"]
    assert len(people) >= 50
    for question in people:
        named = set(re.findall(r"[A-Z][a-z]+", question.text))
        evidence = " ".join(text_of[question.conversation, t] for t in question.evidence)
        assert any(name in evidence for name in named - {"Who", "What", "How"}), question
