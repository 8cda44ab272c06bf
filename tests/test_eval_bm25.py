"""The BM25 baseline: its stemmer, the Okapi formula, and ranking."""

from __future__ import annotations

import math

import pytest

from bot.eval.bm25 import BM25, stem, terms


@pytest.mark.parametrize(
    ("words", "stemmed"),
    [
        (["book", "books", "booked", "booking"], "book"),
        (["move", "moves", "moved", "moving"], "mov"),
        (["stop", "stopped", "stopping"], "stop"),
        (["allergy", "allergies"], "allergy"),
        (["pass", "passed"], "pass"),
    ],
)
def test_word_forms_share_a_stem(words: list[str], stemmed: str) -> None:
    assert {stem(word) for word in words} == {stemmed}


def test_short_words_and_ss_us_is_endings_are_kept() -> None:
    assert [stem(w) for w in ("is", "bus", "glass", "this", "red")] == [
        "is",
        "bus",
        "glass",
        "this",
        "red",
    ]
    assert terms("Booked the VET's slot!") == ["book", "the", "vet", "s", "slot"]


def test_a_score_is_the_okapi_formula() -> None:
    bm25 = BM25(["the cat sat", "the dog sat on the cat", "birds fly"])
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # "cat" is in two of three documents
    average = (3 + 6 + 2) / 3
    for document, length in ((0, 3), (1, 6)):
        norm = 1.2 * (1 - 0.75 + 0.75 * length / average)
        assert bm25.score("cats", document) == pytest.approx(idf * 2.2 / (1 + norm))
    assert bm25.score("cats", 2) == 0.0


def test_search_ranks_by_score_and_leaves_out_documents_without_a_query_word() -> None:
    bm25 = BM25(
        [
            "the dentist moved the appointment to friday",
            "the car needs new tyres",
            "dentist",
            "the the the",
        ]
    )
    found = bm25.search("dentist appointment", k=10)
    assert [n for n, _ in found] == [0, 2]
    assert found[0][1] > found[1][1] > 0
    assert [n for n, _ in bm25.search("the car", k=1)] == [1]
    assert bm25.search("zebra", k=5) == []
    assert BM25([]).search("anything", k=5) == []
