"""Keyword relevance for memory retrieval: a small BM25 over the texts a query is scored against.

Words are runs of letters and digits, lowercased, English stop words dropped, a plural `s`
stripped (a crude stem: "containers" finds "container"). BM25 with k1 = 1.2, b = 0.75 and
idf = ln(1 + (N − df + 0.5) / (df + 0.5)), N and df counted over the texts given. Each text's
words are cached (the same items are scored turn after turn).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

K1 = 1.2
B = 0.75
_WORD = re.compile(r"[^\W_]+")
_STOP_TEXT = (
    "a about an and are as at be been but by can could did do does for from had has have he her "
    "his how i if in into is it its me my no not of on or our she so than that the their them "
    "then there these they this to too was we were what when where which who whom why will with "
    "would you your"
)
STOP_WORDS = frozenset(_STOP_TEXT.split())


@lru_cache(maxsize=16384)
def words(text: str) -> tuple[str, ...]:
    found = (w.lower() for w in _WORD.findall(text))
    return tuple(_stem(w) for w in found if w not in STOP_WORDS)


@lru_cache(maxsize=16384)
def _counts(text: str) -> tuple[Counter[str], int]:
    found = words(text)
    return Counter(found), len(found)


def bm25(query: str, texts: Sequence[str]) -> list[float]:
    """Each text's BM25 score for `query` (0 where it shares no word)."""
    terms = frozenset(words(query))
    scores = [0.0] * len(texts)
    if not terms or not texts:
        return scores
    counted = [_counts(text) for text in texts]
    average = sum(length for _, length in counted) / len(counted) or 1.0
    matched = [(n, shared) for n, (c, _) in enumerate(counted) if (shared := c.keys() & terms)]
    df = Counter(term for _, shared in matched for term in shared)
    idf = {t: math.log(1 + (len(texts) - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    for n, shared in matched:
        counts, length = counted[n]
        norm = K1 * (1 - B + B * length / average)
        scores[n] = sum(idf[t] * counts[t] * (K1 + 1) / (counts[t] + norm) for t in shared)
    return scores


def _stem(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word
