"""The baseline: plain Okapi BM25 over single turns, with a small suffix-stripping stemmer.

Words are runs of letters and digits, lowercased and stemmed (`stem`); no stop words (IDF
weighs common words down). Scoring is Okapi BM25 with k1 = 1.2, b = 0.75 and Lucene's
non-negative IDF, ln(1 + (N − n + 0.5) / (n + 0.5)); a query's distinct stems are summed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from bot.index.query import WORD

K1 = 1.2
B = 0.75
_SUFFIXES = ("ies", "sses", "ing", "ed", "es", "s")
_REPLACEMENTS = {"ies": "y", "sses": "ss"}
_MIN_STEM = 3
_UNDOUBLED = frozenset("lsz")  # "spelling", "passed" keep their double letter


def stem(word: str) -> str:
    """Strip one common English suffix, then a final "e" and a doubled last consonant:
    book/books/booked/booking → book, move/moves/moved/moving → mov, stop/stopped → stop."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                break
            word = word[: -len(suffix)] + _REPLACEMENTS.get(suffix, "")
            break
    if word.endswith("e") and len(word) > _MIN_STEM:
        word = word[:-1]
    if len(word) > _MIN_STEM and word[-1] == word[-2] and word[-1] not in _UNDOUBLED:
        word = word[:-1]
    return word


def terms(text: str) -> list[str]:
    return [stem(word) for word in WORD.findall(text)]


class BM25:
    """An in-memory BM25 index over a fixed list of documents."""

    def __init__(self, documents: Sequence[str], *, k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self._counts = [Counter(terms(document)) for document in documents]
        self._lengths = [sum(counts.values()) for counts in self._counts]
        self._average = sum(self._lengths) / len(self._lengths) if self._lengths else 0.0
        frequency: Counter[str] = Counter()
        for counts in self._counts:
            frequency.update(counts.keys())
        self._idf = {term: self._inverse(n) for term, n in frequency.items()}

    def _inverse(self, containing: int) -> float:
        documents = len(self._counts)
        return math.log(1.0 + (documents - containing + 0.5) / (containing + 0.5))

    def score(self, query: str, document: int) -> float:
        counts, length = self._counts[document], self._lengths[document]
        norm = self.k1 * (1.0 - self.b + self.b * length / self._average) if self._average else 0
        total = 0.0
        for term in dict.fromkeys(terms(query)):
            if tf := counts.get(term, 0):
                total += self._idf[term] * tf * (self.k1 + 1.0) / (tf + norm)
        return total

    def search(self, query: str, *, k: int) -> list[tuple[int, float]]:
        """The best `k` documents that share a term with the query: (index, score), best
        first, earlier documents first on a tie."""
        scored = [(self.score(query, n), n) for n in range(len(self._counts))]
        ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda p: (-p[0], p[1]))
        return [(n, score) for score, n in ranked[:k]]
