"""The bootstrap interval of a mean: where it lies, how it narrows, and that it repeats."""

from __future__ import annotations

import random

from bot.eval.interval import bootstrap


def test_the_interval_holds_the_mean_and_narrows_with_more_questions() -> None:
    rng = random.Random(3)
    few = [rng.choice([0.0, 0.5, 1.0]) for _ in range(40)]
    many = few * 10
    low, high = bootstrap(few)
    mean = sum(few) / len(few)
    assert 0.0 <= low < mean < high <= 1.0
    wide, narrow = high - low, bootstrap(many)[1] - bootstrap(many)[0]
    assert narrow < wide / 2  # ten times the questions: about a third as wide


def test_the_same_values_give_the_same_interval_every_run() -> None:
    values = [0.0, 1.0, 0.5, 1.0, 1.0, 0.0, 0.25]
    assert bootstrap(values) == bootstrap(list(values))


def test_equal_values_and_no_values() -> None:
    assert bootstrap([1.0] * 30) == (1.0, 1.0)
    assert bootstrap([]) == (0.0, 0.0)
