"""Keyword relevance for memory retrieval: a small BM25 over the texts a query is scored against.

Words are runs of letters and digits, lowercased, English stop words dropped, a plural `s`
stripped (a crude stem: "containers" finds "container"). BM25 with k1 = 1.2, b = 0.75 and
idf = ln(1 + (N − df + 0.5) / (df + 0.5)), N and df counted over the texts given.

What scoring needs of a text (`Terms`: its words counted) is made once and kept: for the same
items are scored turn after turn. `ItemTerms` keeps each item's by its id, made again when the
item's text changes (its last `ITEM_TERMS` items at most); `terms` keeps those of other texts
(a working-memory line) by the text.
"""

from __future__ import annotations

import math
import sys
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from bot.index.query import STOP_WORDS, WORD
from bot.models import MemoryItem

K1 = 1.2
B = 0.75
ITEM_TERMS = 16384


@dataclass(frozen=True)
class Terms:
    """A text's words, counted: all BM25 needs of it."""

    counts: Counter[str]
    length: int

    @classmethod
    def of(cls, text: str) -> Terms:
        found = words(text)
        return cls(Counter(found), len(found))


def words(text: str) -> tuple[str, ...]:
    found = (w.lower() for w in WORD.findall(text))
    return tuple(sys.intern(stem(w)) for w in found if w not in STOP_WORDS)


@lru_cache(maxsize=4096)
def terms(text: str) -> Terms:
    return Terms.of(text)


class ItemTerms:
    """Each item's `Terms`, by id, made again when its text changed; the last `size` items
    made are kept (the first made go first). Thread-safe."""

    def __init__(self, size: int = ITEM_TERMS) -> None:
        self.size = size
        self._by_id: dict[str, tuple[str, Terms]] = {}
        self._lock = threading.Lock()

    def of(self, items: Sequence[MemoryItem]) -> list[Terms]:
        with self._lock:
            found = [self._one(item) for item in items]
            if len(self._by_id) > self.size:
                for oldest in list(self._by_id)[: len(self._by_id) - self.size]:
                    del self._by_id[oldest]
        return found

    def _one(self, item: MemoryItem) -> Terms:
        kept = self._by_id.get(item.id)
        if kept is not None and kept[0] == item.text:
            return kept[1]
        made = Terms.of(item.text)
        self._by_id.pop(item.id, None)  # made again: it goes to the end
        self._by_id[item.id] = (item.text, made)
        return made


def bm25(query: str, texts: Sequence[str]) -> list[float]:
    """Each text's BM25 score for `query` (0 where it shares no word)."""
    return score(query, [terms(text) for text in texts])


def score(query: str, documents: Sequence[Terms]) -> list[float]:
    """Each document's BM25 score for `query` (0 where it shares no word)."""
    wanted = frozenset(words(query))
    scores = [0.0] * len(documents)
    if not wanted or not documents:
        return scores
    average = sum(d.length for d in documents) / len(documents) or 1.0
    matched = [
        (n, d.counts.keys() & wanted)
        for n, d in enumerate(documents)
        if not wanted.isdisjoint(d.counts)
    ]
    df = Counter(term for _, shared in matched for term in shared)
    idf = {t: math.log(1 + (len(documents) - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    for n, shared in matched:
        counts, length = documents[n].counts, documents[n].length
        norm = K1 * (1 - B + B * length / average)
        scores[n] = sum(idf[t] * counts[t] * (K1 + 1) / (counts[t] + norm) for t in shared)
    return scores


def stem(word: str) -> str:
    """A plural's "s" dropped (not a "ss"): "containers" finds "container"."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word
