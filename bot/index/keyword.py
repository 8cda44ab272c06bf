"""Keyword candidates: bm25 over FTS5, only for the terms that tell something in the chats
searched, kept fast on a large index by choosing which terms to score.

Telling and common terms. A word's worth depends on the chunks being searched, not on the
whole index: a speaker's name is in nearly every line of its own chat and in few chunks of an
index that holds many chats, so the index's statistics call it rare. So each term is counted
within the searched scopes (`Frequency`): a term in more than half of their chunks is common
there (bm25's own inverse document frequency, log((N − n + ½) / (n + ½)), is below zero),
and a chunk that holds nothing else is no evidence: it is as likely to be wanted as any chunk
of the chat. The candidates are the chunks that hold a telling term, ranked by bm25 over the
telling terms only, so a name cannot fill the list and keep the vector candidates out (only
a query's time makes the chunks of that time that hold only common terms candidates:
`candidates` with `between`). A query of nothing but common terms is ranked by bm25 over
them, as before: there is nothing better to go by. A snippet's lines are weighed by the same
counts (`weights`: a name in every line of its chat weighs nearly nothing there). Counting
within scopes is one FTS5 query per term and scope set, cached; when the scopes hold at least
half the index, the index's own count stands for theirs unless the term could be common in
them (its count is over half their size), which is counted. Fewer than `COMMON_FROM` chunks
make nothing common.

Cost. bm25 costs about a microsecond per posting it scores, and a common word is in a large
share of all chunks. So the query's telling terms are taken rarest first (document frequencies
from FTS5, cached) until their postings reach the budget; the rest are dropped (a word in many
chunks adds almost nothing to bm25 anyway: in a quarter of them, its idf is under a fifth of a
rare word's). The budget is a quarter of the index's chunks, at least `MIN_POSTINGS` and at
most `POSTINGS_BUDGET`. When even the rarest term is over the budget the query is vague: its
candidates are the newest chunks that contain one of its three rarest terms, without bm25.
The vector side, when present, still ranks such queries by meaning.

Feedback (a second pass). A question often names what its answer does not: "What injury did
Daniel's sister have?" finds "My sister Ruth is staying with us", and the injury is in "Ruth broke
a wrist". So when the first pass finds fewer than its limit, the first `FEEDBACK_TERMS` words of
the best lines (`snippets.best_line`) of its first `FEEDBACK_HITS` chunks, less the query's own,
labels ("User:", "Daniel:": who speaks, not what is said), numbers (a note line's time) and those
in more than half the chunks searched however few they are, are searched for as another query
(chosen as above), and its best `FEEDBACK_CHUNKS` not found already come after every chunk of the
first pass (`feedback`). A handful, not the whole room: beside a vector side, more push the vector
candidates out of the section (on REALTALK's 4,096-token sections with model2vec, 75 cost 0.731 →
0.716). Keyword alone, when a search asks for many (a large window's `# Relevant Memory`: 200
candidates), up to half of those beyond `CANDIDATES` (`feedback_chunks`: 75): with five, its
sections ran out of hits at ~2,900 tokens, and REALTALK's recall in them rose 0.683 → 0.705 (multi-
hop 0.547 → 0.588). The new words weigh nothing in the hits' order or snippets. Not for a vague
query: its first chunks are only the newest. Cost: ~0.5 ms (benchmarks/README.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from bot.index import search
from bot.index.query import fts_expression, query_terms
from bot.index.search import CANDIDATES, FEEDBACK_CHUNKS, Fused, Fusion, Hit, fuse, rank
from bot.index.snippets import Terms, best_line
from bot.index.sources import valid_scopes
from bot.index.store import ChunkRow
from bot.index.when import Dated, Window, resolve

POSTINGS_BUDGET = 4000
MIN_POSTINGS = 1000
VAGUE_TERMS = 3
COMMON_FROM = 20  # chunks: in fewer, "more than half of them" is a handful, not a pattern
_STALE_SHARE = 0.1  # frequencies are recounted when the index grew or shrank by this share
_CACHE_TERMS = 50_000
FEEDBACK_HITS = 3  # the first pass's chunks whose best lines give the second pass its words
FEEDBACK_TERMS = 8  # of their words, the first: each is counted (a posting scan) when new
_LABEL = re.compile(r"[^\W_]+:")  # "User:", "Daniel:", "[09:15": who speaks, when; not what


@dataclass(frozen=True)
class Frequency:
    """How many of the searched chunks hold a term (`within`), and how many there are."""

    within: int
    chunks: int

    @property
    def common(self) -> bool:
        """In more than half of the chunks (bm25's idf is below zero), of at least
        `COMMON_FROM` chunks."""
        return self.chunks >= COMMON_FROM and 2 * self.within > self.chunks

    @property
    def weight(self) -> float:
        """The inverse document frequency, kept positive (a common term weighs under log 2,
        a term in one chunk of n about log n)."""
        return math.log(1 + (self.chunks - self.within + 0.5) / (self.within + 0.5))


class KeywordStore(Protocol):
    """Where the keyword candidates come from: `IndexStore` (SQLite FTS5, the product), or
    another full-text engine over the same chunks (`benchmarks/pg_keywords.py`, PostgreSQL, to
    compare its ranking). An expression is `fts_expression`'s: the quoted words, ORed."""

    @property
    def size(self) -> int: ...

    def chunks_in(self, scopes: Sequence[str]) -> int: ...

    def document_frequency(self, term: str, scopes: Sequence[str] | None = None) -> int: ...

    def match(
        self,
        expression: str,
        scopes: Sequence[str],
        *,
        limit: int,
        ranked: bool,
        between: tuple[float, float] | None = None,
    ) -> list[int]: ...

    def newest(
        self, scopes: Sequence[str], *, between: tuple[float, float], limit: int
    ) -> list[int]: ...

    def rows(
        self, ids: Iterable[int], scopes: Sequence[str], *, text: bool
    ) -> dict[int, ChunkRow]: ...


@dataclass(frozen=True)
class Found:
    """A query's keyword side, as fusion takes it: the candidates (the second pass's after
    the first's), those of the time it names, whether it was vague, its terms' weights."""

    ranked: list[int]
    dated: list[int]
    vague: bool
    weights: dict[str, float]


@dataclass(frozen=True)
class Asked:
    """A search as its keyword and vector sides read it: the scopes it may see, how many hits,
    when it was asked (what a time it names is read against, and recency's now) and the query
    read for time (`bot.index.when`)."""

    scopes: tuple[str, ...]
    k: int
    at: datetime
    dated: Dated

    @classmethod
    def read(
        cls, query: str, *, scopes: Sequence[str], k: int, now: datetime | None
    ) -> Asked | None:
        """None when the search can find nothing (no scope, no hit wanted); `now` defaults
        to the clock."""
        allowed = valid_scopes(scopes)
        if not allowed or k <= 0:
            return None
        at = now or datetime.now(UTC)
        return cls(allowed, k, at, resolve(query, at))


@dataclass(frozen=True)
class Candidates:
    """A search's candidates fused, with their rows: `hits` ranks them (arithmetic alone: no
    store, no lock)."""

    asked: Asked
    fused: Fused
    rows: dict[int, ChunkRow]
    weights: dict[str, float]

    def hits(self) -> list[Hit]:
        now = self.asked.at.timestamp()
        return rank(self.fused, self.rows, weights=self.weights, now=now, k=self.asked.k)


@dataclass(frozen=True)
class _Chosen:
    telling: list[str]  # (the common ones when none is; when vague, its rarest terms)
    common: list[str]
    vague: bool


class KeywordSearch:
    """Not thread-safe on its own: `MemoryIndex` holds its lock around every call."""

    def __init__(
        self, store: KeywordStore, *, budget: int | None = None, fusion: Fusion = "keyword"
    ) -> None:
        self.store = store
        self.fusion = fusion
        self.fixed_budget = budget  # tests; else from the index's size
        self._frequency: dict[str, int] = {}
        self._counted_at = 0  # chunk count when the cache was started
        self._within: dict[tuple[frozenset[str], str], tuple[int, int]] = {}  # (count, at size)

    def gather(
        self, asked: Asked, nearest: Callable[[], Sequence[int]] | None = None
    ) -> Candidates:
        """A search's candidates (`fuse`) with their rows: the keyword side's, then those
        `nearest` gives, when there is a vector side (called once the keyword side ran: its
        scan may run meanwhile)."""
        found = self.find(
            query_terms(asked.dated.rest),
            asked.scopes,
            asked.dated.window,
            limit=search.keyword_candidates(asked.k),
            vectors=nearest is not None,
        )
        vector = nearest() if nearest is not None else []
        fused = fuse(found.ranked, vector, dated=found.dated, vague=found.vague, fusion=self.fusion)
        rows = self.store.rows(fused.scores, asked.scopes, text=True)
        return Candidates(asked, fused, rows, found.weights)

    def find(
        self,
        terms: Sequence[str],
        scopes: Sequence[str],
        window: Window | None,
        *,
        limit: int = CANDIDATES,
        vectors: bool = False,  # a vector side fills the list: the second pass stays small
    ) -> Found:
        """Everything a query's keyword side gives fusion (`bot.index.search.fuse`): the
        candidates, then the second pass's when the query is not vague; with a `window`
        (the time the query names) the candidates of that time, and the query is never
        vague for fusion (the date ranks)."""
        found = self.candidates(terms, scopes, limit=limit)
        vague = self.vague(terms, scopes)
        weights = self.weights(terms, scopes)
        if not vague:  # the second pass: after the first, while there is room (see the module)
            more = FEEDBACK_CHUNKS if vectors else search.feedback_chunks(limit)
            found += self.feedback(found, weights, scopes, limit=limit, most=more)
        dated = self._dated(window, terms, scopes, limit=limit) if window else []
        return Found(found, dated, vague and window is None, weights)

    def _dated(
        self, window: Window, terms: Sequence[str], scopes: Sequence[str], *, limit: int
    ) -> list[int]:
        """The keyword candidates of the window's time (those that hold only common terms
        too: the date tells), or the newest chunks of that time when none matches the words
        ("what happened yesterday?"). They come before the other candidates: a dated query
        still finds what the date misses (a note's time is its file's)."""
        between = (window.start.timestamp(), window.end.timestamp())
        inside = self.candidates(terms, scopes, limit=limit, between=between)
        return inside or self.store.newest(scopes, between=between, limit=limit)

    def candidates(
        self,
        terms: Sequence[str],
        scopes: Sequence[str],
        *,
        limit: int,
        between: tuple[float, float] | None = None,
    ) -> list[int]:
        """Chunk ids for the query's terms within `scopes`, best first: those that hold a
        telling term. With `between` (epoch seconds, end exclusive) only chunks of that time,
        and there those that hold only common terms too, after them (the time tells)."""
        if not terms or not scopes:
            return []
        chosen = self._choose(terms, scopes)
        if chosen.vague:
            expression = fts_expression(chosen.telling)
            return self.store.match(expression, scopes, limit=limit, ranked=False, between=between)
        found = self._ranked(chosen.telling, scopes, limit=limit, between=between)
        if between is None or not chosen.common:
            return found
        others = self._ranked(chosen.common, scopes, limit=limit, between=between)
        return list(dict.fromkeys([*found, *others]))[:limit]

    def feedback(
        self,
        found: Sequence[int],
        weights: Mapping[str, float],
        scopes: Sequence[str],
        *,
        limit: int,
        most: int = FEEDBACK_CHUNKS,
    ) -> list[int]:
        """The second pass (see the module): chunks that hold the words of the best lines of
        the first pass's first chunks (`found`, for the query's term `weights`), not found
        already: at most `most`, and `found` filled up to `limit`, nothing when it is full."""
        room = limit - len(found)
        if room <= 0 or not found:
            return []
        first = found[:FEEDBACK_HITS]
        rows = self.store.rows(first, scopes, text=True)
        seek = Terms.of(weights)
        lines = (_LABEL.sub(" ", best_line(rows[i].text, seek)) for i in first if i in rows)
        words = dict.fromkeys(
            w for line in lines for w in query_terms(line) if w not in weights and not w.isdigit()
        )
        half = self.store.chunks_in(scopes) / 2
        terms = [
            w for w in list(words)[:FEEDBACK_TERMS] if self.frequency(w, scopes).within <= half
        ]
        if not terms:
            return []
        known = set(found)
        more = [i for i in self.candidates(terms, scopes, limit=limit) if i not in known]
        return more[: min(room, most)]

    def vague(self, terms: Sequence[str], scopes: Sequence[str]) -> bool:
        """Whether even the query's rarest term is over the budget: its candidates are the
        newest matches, not ranked by bm25 (the frequencies are cached: this costs nothing
        after `candidates`)."""
        return bool(terms) and self._choose(terms, scopes).vague

    def weights(self, terms: Sequence[str], scopes: Sequence[str]) -> dict[str, float]:
        """Each term's inverse document frequency within `scopes` (`Frequency.weight`), a
        rare word weighing most: what a snippet's lines are scored by."""
        return {term: self.frequency(term, scopes).weight for term in terms}

    def frequency(self, term: str, scopes: Sequence[str]) -> Frequency:
        """How many chunks of `scopes` hold the term: counted within them (cached), or the
        whole index's count when they hold at least half of it and the term is in at most
        half of their chunks (counting within a large scope scans its postings; it is
        done only where it could make the term common)."""
        size, inside = self.store.size, self.store.chunks_in(scopes)
        everywhere = self._document_frequency(term)
        if inside == size or (2 * inside >= size and 2 * everywhere <= inside):
            return Frequency(everywhere, size)
        return Frequency(self._count_within(term, scopes, inside), inside)

    @property
    def budget(self) -> int:
        if self.fixed_budget is not None:
            return self.fixed_budget
        return min(max(self.store.size // 4, MIN_POSTINGS), POSTINGS_BUDGET)

    def _ranked(
        self,
        terms: Sequence[str],
        scopes: Sequence[str],
        *,
        limit: int,
        between: tuple[float, float] | None,
    ) -> list[int]:
        if not terms:
            return []
        expression = fts_expression(terms)
        return self.store.match(expression, scopes, limit=limit, ranked=True, between=between)

    def _choose(self, terms: Sequence[str], scopes: Sequence[str]) -> _Chosen:
        """The telling terms, rarest first, then the common ones, while their postings fit
        the budget (at least one); a query of nothing but common terms is ranked by those.
        When even the rarest term is over the budget, the vague query's rarest terms."""
        budget = self.budget
        order = self._order(terms, scopes, budget=budget)
        if order[0][1] > budget:
            return _Chosen([term for _, _, term in order[:VAGUE_TERMS]], [], vague=True)
        chosen: dict[bool, list[str]] = {False: [], True: []}
        total = 0
        for later, frequency, term in order:
            if total + frequency > budget and (chosen[False] or chosen[True]):
                break
            chosen[later].append(term)
            total += frequency
        if not chosen[False]:
            return _Chosen(chosen[True], [], vague=False)
        return _Chosen(chosen[False], chosen[True], vague=False)

    def _order(
        self, terms: Sequence[str], scopes: Sequence[str], *, budget: int
    ) -> list[tuple[bool, int, str]]:
        """The terms keyed for choosing: whether they come later (common in the scopes, or
        over the budget), their document frequency, the term; telling ones first, rarest
        first."""
        keyed = []
        for term in terms:
            frequency = self._document_frequency(term)
            later = frequency > budget or self.frequency(term, scopes).common
            keyed.append((later, frequency, term))
        return sorted(keyed)

    def _count_within(self, term: str, scopes: Sequence[str], size: int) -> int:
        """The term's count within `scopes` (of `size` chunks now), recounted when their size
        has moved by more than `_STALE_SHARE` since it was counted."""
        key = (frozenset(scopes), term)
        known = self._within.get(key)
        if known is not None and abs(size - known[1]) <= _STALE_SHARE * known[1]:
            return known[0]
        if len(self._within) >= _CACHE_TERMS:
            self._within.clear()
        found = self.store.document_frequency(term, sorted(key[0]))
        self._within[key] = (found, size)
        return found

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
