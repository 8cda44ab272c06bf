"""The synthetic evalset: regenerable, valid, and built as its docstring says."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from bot.eval.dataset import load_dataset, parse_dataset
from bot.eval.synthetic import generate, main
from tests.harness import REPO

SHIPPED = REPO / "tests" / "data" / "evalset_months.json"
CATEGORIES = {"single-hop", "multi-hop", "temporal", "open-domain", "knowledge-update"}


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
