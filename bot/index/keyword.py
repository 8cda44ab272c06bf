"""Keyword candidates: bm25 over FTS5, kept fast on a large index by choosing which terms to
score.

bm25 costs about a microsecond per posting it scores, and a common word is in a large share
of all chunks. So the query's terms are taken rarest first (document frequencies from FTS5,
cached) until their postings reach the budget; the rest are dropped (a word in many chunks adds
almost nothing to bm25 anyway: in a quarter of them, its idf is under a fifth of a rare word's).
The budget is a quarter of the index's chunks, at least `MIN_POSTINGS` and at most
`POSTINGS_BUDGET`. When even the rarest term is over the budget the
query is vague: its candidates are the newest chunks that contain one of its three rarest
terms, without bm25. The vector side, when present, still ranks such queries by meaning.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bot.index.query import fts_expression
from bot.index.store import IndexStore

POSTINGS_BUDGET = 4000
MIN_POSTINGS = 1000
VAGUE_TERMS = 3
_STALE_SHARE = 0.1  # frequencies are recounted when the index grew or shrank by this share
_CACHE_TERMS = 50_000


class KeywordSearch:
    """Not thread-safe on its own: `MemoryIndex` holds its lock around every call."""

    def __init__(self, store: IndexStore, *, budget: int | None = None) -> None:
        self.store = store
        self.fixed_budget = budget  # tests; else from the index's size
        self._frequency: dict[str, int] = {}
        self._counted_at = 0  # chunk count when the cache was started

    def candidates(
        self,
        terms: Sequence[str],
        scopes: Sequence[str],
        *,
        limit: int,
        between: tuple[float, float] | None = None,
    ) -> list[int]:
        """Chunk ids for the query's terms within `scopes` (and of that time, when
        `between` is given: epoch seconds, end exclusive), best first."""
        if not terms or not scopes:
            return []
        chosen, vague = self._choose(terms)
        expression = fts_expression(chosen)
        return self.store.match(expression, scopes, limit=limit, ranked=not vague, between=between)

    def vague(self, terms: Sequence[str]) -> bool:
        """Whether even the query's rarest term is over the budget: its candidates are the
        newest matches, not ranked by bm25 (the frequencies are cached: this costs nothing
        after `candidates`)."""
        return bool(terms) and self._choose(terms)[1]

    def weights(self, terms: Sequence[str]) -> dict[str, float]:
        """Each term's inverse document frequency (bm25's), a rare word weighing most: what a
        snippet's lines are scored by (the frequencies are cached by `candidates`)."""
        size = max(self.store.size, 1)
        found = {}
        for term in terms:
            frequency = self._document_frequency(term)
            found[term] = math.log(1 + (size - frequency + 0.5) / (frequency + 0.5))
        return found

    @property
    def budget(self) -> int:
        if self.fixed_budget is not None:
            return self.fixed_budget
        return min(max(self.store.size // 4, MIN_POSTINGS), POSTINGS_BUDGET)

    def _choose(self, terms: Sequence[str]) -> tuple[list[str], bool]:
        """The rarest terms within the budget (at least one), or the vague-query terms; and
        whether the query is vague (even its rarest term is over the budget)."""
        by_rarity = sorted((self._document_frequency(term), term) for term in terms)
        budget = self.budget
        chosen: list[str] = []
        total = 0
        for frequency, term in by_rarity:
            if chosen and total + frequency > budget:
                break
            chosen.append(term)
            total += frequency
        if total > budget:
            return [term for _, term in by_rarity[:VAGUE_TERMS]], True
        return chosen, False

    def _document_frequency(self, term: str) -> int:
        self._expire()
        if (known := self._frequency.get(term)) is not None:
            return known
        if len(self._frequency) >= _CACHE_TERMS:
            self._frequency.clear()
        found = self._frequency[term] = self.store.document_frequency(term)
        return found

    def _expire(self) -> None:
        size = self.store.size
        if abs(size - self._counted_at) > _STALE_SHARE * self._counted_at:
            self._frequency.clear()
            self._counted_at = size
