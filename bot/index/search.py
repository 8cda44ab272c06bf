"""Hybrid ranking: keyword and vector candidate lists fused into diversified `Hit`s.

The decision and its numbers are in the package docstring (`bot.index`, "Ranking"); this module
is the pure arithmetic: the fusion rule (keyword first, vectors fill; Reciprocal Rank Fusion
only for a vague query), the recency and salience tie-breaks, one-path and duplicate limits,
touching chunks merged, and the hits' order by their best line (what a hit shows:
`bot.index.snippets`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol

from bot.index.snippets import Terms, best_weight, cut, merge
from bot.index.store import ChunkRow

RRF_K = 60
CANDIDATES = 50  # from each side (the vector side: at least; `vector_candidates`)
FEEDBACK_CHUNKS = 5  # the keyword side's second pass: a second hop is a chunk or two …
FEEDBACK_SHARE = 2  # … unless more than CANDIDATES are asked for: 1 / this of those beyond
VECTOR_PER_HIT = 1.5  # vector candidates per hit asked for, beyond CANDIDATES
RECENCY_WEIGHT = 0.0005  # at most ~ the gap between ranks 1 and 3 of one list
RECENCY_HALF_LIFE_DAYS = 30.0
SALIENCE_WEIGHT = 0.0005
PER_PATH = 2
_DAY = 86400.0


@dataclass(frozen=True)
class Hit:
    path: str  # relative to memory/, or `sessions/<key>#<turn>` for an exchange
    start_line: int
    end_line: int
    text: str  # a snippet of at most ~SNIPPET_CHARS (`bot.index.snippets`)
    score: float
    kind: str
    scope: str
    at: datetime
    origin: str = ""  # whose words (`bot.index.sources.origin_of`): "" the people's own

    @property
    def citation(self) -> str:
        """`path#L3-L9`, what `memory_get` reads; the path alone when there are no lines."""
        return f"{self.path}#{self.lines}" if self.lines else self.path

    @property
    def lines(self) -> str:
        """The citation's line range, `L3-L9`; "" for a remote hit (`lightrag:…`)."""
        return f"L{self.start_line}-L{self.end_line}" if self.start_line > 0 else ""


Fusion = Literal["keyword", "ranks"]  # keyword first, vectors fill; or both by rank (`fuse`)
Wait = Literal["all", "walks"]  # what a search waits for: every sync asked before, or walks


class Searcher(Protocol):
    """The embedded index's search (`IndexService.search`): blocking, thread-safe; `wait`
    and `now` as `IndexService.search` reads them."""

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        k: int,
        wait: Wait = "all",
        now: datetime | None = None,
    ) -> list[Hit]: ...


@dataclass(frozen=True)
class Fused:
    """Candidates' scores, those ranked ahead of all others whatever the tie-breaks, and of
    those the ones of the time a query names, ahead of the rest of them."""

    scores: dict[int, float]
    ahead: frozenset[int] = field(default_factory=frozenset)
    dated: frozenset[int] = field(default_factory=frozenset)


def keyword_candidates(k: int) -> int:
    """How many chunks the keyword side offers for `k` hits: `CANDIDATES`, or one a hit when
    more are asked for (a large window's `# Relevant Memory` looks for 2 × its hits: with 50
    candidates alone its 4,096 tokens ran out of hits at ~2,000)."""
    return max(CANDIDATES, k)


def feedback_chunks(limit: int) -> int:
    """How many chunks the keyword side's second pass (`bot.index.keyword`) may add to a list
    of `limit` candidates: a handful, or half of those beyond `CANDIDATES`."""
    return max(FEEDBACK_CHUNKS, (limit - CANDIDATES) // FEEDBACK_SHARE)


def vector_candidates(k: int) -> int:
    """How many chunks the vector side offers for `k` hits: `CANDIDATES`, or `VECTOR_PER_HIT`
    per hit when more are asked for (`# Relevant Memory` looks for 2 × its hits). Many of
    them add no hit: those keyword search found are its hits already, and an exchange is a
    chunk twice (itself and its daily note's line: merged, or left out as shown). With
    `CANDIDATES` alone, tests/data/evalset_months.json's sections (1,024 tokens, 60 hits
    looked for, the 256-d model) ran out of hits at 942 tokens on average. The vector hits
    come after every keyword hit (`fuse`): more of them never moves one. 1.5 a hit gives
    evalset_months's sections the recall 2 a hit gave (hybrid 0.867), and each candidate
    costs its row and its place in `rank`."""
    return max(CANDIDATES, int(VECTOR_PER_HIT * k))


def fuse(
    keyword: Sequence[int],
    vector: Sequence[int] = (),
    *,
    dated: Sequence[int] = (),
    vague: bool = False,
    fusion: Fusion = "keyword",
) -> Fused:
    """Keyword first, vectors fill: the keyword candidates keep their order, ahead of every
    other (the `dated` ones, the chunks of the time a query names, before them); the vector
    candidates keyword search did not find continue the list after them. A chunk at place n
    of that one list scores 1 / (RRF_K + n). For a `vague` query (keyword candidates by
    recency, not bm25), or with `fusion` "ranks" (an embedder good enough to compete: the
    `rag.fusion` setting), the lists are fused instead (`reciprocal_rank_fusion`), the
    `dated` ones still ahead of the rest."""
    if vague:
        return Fused(reciprocal_rank_fusion(keyword, vector))
    if fusion == "ranks" and vector:
        fused = reciprocal_rank_fusion(list(dict.fromkeys([*dated, *keyword])), vector)
        return Fused(fused, frozenset(dated), frozenset(dated))
    first = list(dict.fromkeys([*dated, *keyword]))
    ranking = list(dict.fromkeys([*first, *vector]))
    scores = {chunk_id: 1.0 / (RRF_K + n) for n, chunk_id in enumerate(ranking, start=1)}
    return Fused(scores, frozenset(first), frozenset(dated))


def reciprocal_rank_fusion(*rankings: Sequence[int]) -> dict[int, float]:
    """Each list adds 1 / (RRF_K + rank) to a chunk, rank from 1."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return scores


def tie_break(row: ChunkRow, *, now: float) -> float:
    """Small additive terms: newer and more salient chunks win near-ties."""
    age_days = max(0.0, now - row.at) / _DAY
    recency = math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
    return RECENCY_WEIGHT * recency + SALIENCE_WEIGHT * row.salience


def rank(
    fused: Fused,
    rows: Mapping[int, ChunkRow],
    *,
    weights: Mapping[str, float],
    now: float,
    k: int,
) -> list[Hit]:
    """The best k hits (see the package docstring, "Ranking", 4 and 5): at most PER_PATH per
    path, identical texts once (HISTORY.md and its monthly file hold the same entries), a chunk
    that overlaps or touches a better hit of its file merged into it (one hit, its lines once:
    `snippets.merge`; a keyword candidate only with another); then the candidates `ahead`
    first (the `dated` ones before the rest of them), by the weight of the query terms in the
    hit's best line (`snippets.cut`), then by score and tie-breaks; the others after them by
    score and tie-breaks."""
    order = sorted(
        (i in fused.ahead, score + tie_break(row, now=now), i)
        for i, row in rows.items()
        if (score := fused.scores.get(i)) is not None
    )
    picked: list[_Picked] = []
    by_path: dict[str, list[_Picked]] = {}
    seen: set[str] = set()
    for ahead, score, chunk_id in reversed(order):
        row = rows[chunk_id]
        text = " ".join(row.text.split())
        same = by_path.setdefault(row.path, [])
        near = _touching([p for p in same if p.ahead == ahead], row) if same else None
        if text in seen or (len(same) >= PER_PATH and near is None):
            continue
        seen.add(text)
        if near is not None:
            near.absorb(row)
        else:
            same.append(
                _Picked(row, score, ahead, row.start_line, row.end_line, row.text, row.origin)
            )
            picked.append(same[-1])
    terms = Terms.of(weights)
    first = [p for p in picked if p.ahead]
    weigh = _cut_all if len(first) <= k else _weigh_first  # every one shown, or only the best k
    keyword = [(p, *weigh(p.text, terms)) for p in first]
    dated = fused.dated
    keyword.sort(key=lambda found: (found[0].row.id not in dated, -found[1], -found[0].score))
    hits = [_hit(p, shown or cut(p.text, terms).text) for p, _, shown in keyword[:k]]
    others = (p for p in picked if not p.ahead)  # as fused, cut only when shown
    hits.extend(_hit(p, cut(p.text, terms).text) for p in itertools.islice(others, k - len(hits)))
    return hits


def _cut_all(text: str, terms: Terms) -> tuple[float, str]:
    """The best line's weight and what is shown, in one walk over the lines."""
    found = cut(text, terms)
    return found.best, found.text


def _weigh_first(text: str, terms: Terms) -> tuple[float, str]:
    """The best line's weight only: the cut waits until the hit is among those shown."""
    return best_weight(text, terms), ""


@dataclass
class _Picked:
    """A hit being made: its best chunk, and the lines and text of the chunks merged in."""

    row: ChunkRow
    score: float
    ahead: bool  # a keyword candidate (`Fused.ahead`): merged only with its own kind
    start_line: int
    end_line: int
    text: str
    origin: str = ""  # of the chunks merged in: others' words when any of them is

    def absorb(self, row: ChunkRow) -> None:
        self.origin = self.origin or row.origin
        if row.start_line < self.start_line:
            self.text = merge(row.text, self.text)
        else:
            self.text = merge(self.text, row.text)
        self.start_line = min(self.start_line, row.start_line)
        self.end_line = max(self.end_line, row.end_line)


def _touching(picked: Sequence[_Picked], row: ChunkRow) -> _Picked | None:
    """The picked hit of the row's file whose lines overlap or touch the row's."""
    for hit in picked:
        if row.start_line <= hit.end_line + 1 and row.end_line >= hit.start_line - 1:
            return hit
    return None


def _hit(picked: _Picked, text: str) -> Hit:
    row = picked.row
    return Hit(
        path=row.path,
        start_line=picked.start_line,
        end_line=picked.end_line,
        text=text,
        score=round(picked.score, 6),
        kind=row.kind,
        scope=row.scope,
        at=datetime.fromtimestamp(row.at, tz=UTC),
        origin=picked.origin,
    )
