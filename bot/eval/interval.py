"""Confidence intervals for the evaluation's means: a percentile bootstrap over questions.

A question's recall is a share (0, ½, ⅔, 1 …), not a yes or no, so a binomial interval (Wilson)
does not fit it; resampling the questions does, whatever the values. `RESAMPLES` resamples of
the questions with replacement, from a fixed seed (the same figures every run); the interval is
the 2.5th and 97.5th percentiles of their means. With every value equal it is that value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RESAMPLES = 2000
SEED = 0


def bootstrap(
    values: Sequence[float], *, level: float = 0.95, resamples: int = RESAMPLES
) -> tuple[float, float]:
    """The `level` interval of the mean of `values`, (low, high); (0, 0) for no values."""
    if not values:
        return 0.0, 0.0
    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(SEED)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)
