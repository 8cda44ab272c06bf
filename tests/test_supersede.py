"""The supersede rule: which facts replace which, and the mark a replaced line carries."""

from __future__ import annotations

from datetime import date

import pytest

from bot.memory.notes.supersede import (
    current_lines,
    kept_marks,
    mark_replaced,
    topic_of,
    unmarked,
    until_of,
)

DAY = date(2026, 11, 20)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Ann lives in Lyon", "Ann moved to Bergen"),
        ("I live in Oslo", "Lives in Bergen"),
        ("My birthday is May 3", "My birthday is June 3"),
        ("Tom works at Acme", "Tom works for Globex"),
        ("Ann's favourite colour is red", "Ann's favourite colour is green"),
        ("The dentist appointment is on Friday", "The dentist appointment is on 2026-12-01"),
    ],
)
def test_the_rule_finds_the_same_subject_and_attribute(old: str, new: str) -> None:
    assert topic_of(old) is not None
    assert topic_of(old) == topic_of(new)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Ann lives in Lyon", "Tom lives in Lyon"),
        ("I work at Acme", "I work as a nurse"),
        ("Ann's cat is called Miso", "Ann's cat is black"),
        ("My favourite colour is red", "My favourite food is pizza"),
        ("Ann is on holiday", "Ann is on the board"),
    ],
)
def test_facts_about_different_things_do_not_replace_each_other(one: str, other: str) -> None:
    assert topic_of(one) is None or topic_of(one) != topic_of(other)


def test_a_replaced_line_is_marked_and_left_out_of_the_current_lines() -> None:
    text = "# Ann\n- Ann lives in Lyon\n- Ann has a cat\n"

    marked, replaced = mark_replaced(text, ["Ann lives in Bergen"], DAY)

    assert marked == "# Ann\n- Ann lives in Lyon _(was, until 2026-11-20)_\n- Ann has a cat\n"
    assert replaced == ["- Ann lives in Lyon"]
    lines = marked.splitlines()
    assert current_lines(lines) == ("# Ann", "- Ann has a cat")
    assert until_of(lines[1]) == DAY and unmarked(lines[1]) == "- Ann lives in Lyon"
    assert mark_replaced(marked, ["Ann lives in Oslo"], date(2027, 1, 1))[0] == marked


def test_history_the_model_copied_without_its_mark_gets_it_back() -> None:
    before = "- Ann lives in Lyon _(was, until 2026-11-20)_\n- Ann lives in Bergen\n"
    update = "- Ann lives in Lyon\n- Ann lives in Bergen\n- Ann has a dog\n"

    assert kept_marks(update, before) == before + "- Ann has a dog\n"
