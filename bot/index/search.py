"""Hybrid ranking: keyword and vector candidate lists fused into diversified `Hit`s.

The decision and its numbers are in the package docstring (`bot.index`, "Ranking"); this module
is the pure arithmetic: the fusion rule (keyword first, vectors fill; Reciprocal Rank Fusion
only for a vague query), the recency and salience tie-breaks, one-path and duplicate limits,
and the snippet.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot.index.store import ChunkRow

RRF_K = 60
CANDIDATES = 50  # from each side
RECENCY_WEIGHT = 0.0005  # at most ~ the gap between ranks 1 and 3 of one list
RECENCY_HALF_LIFE_DAYS = 30.0
SALIENCE_WEIGHT = 0.0005
PER_PATH = 2
SNIPPET_CHARS = 700
_DAY = 86400.0


@dataclass(frozen=True)
class Hit:
    path: str  # relative to memory/, or `sessions/<key>#<turn>` for an exchange
    start_line: int
    end_line: int
    text: str  # a snippet of at most ~SNIPPET_CHARS
    score: float
    kind: str
    scope: str
    at: datetime

    @property
    def citation(self) -> str:
        if self.start_line <= 0:  # a remote hit (`lightrag:…`) has no line range
            return self.path
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


@dataclass(frozen=True)
class Fused:
    """Candidates' scores, and those ranked ahead of all others whatever the tie-breaks."""

    scores: dict[int, float]
    ahead: frozenset[int] = field(default_factory=frozenset)


def fuse(keyword: Sequence[int], vector: Sequence[int] = (), *, vague: bool = False) -> Fused:
    """Keyword first, vectors fill: the keyword candidates keep their order, ahead of every
    other; the vector candidates keyword search did not find continue the list after them.
    A chunk at place n of that one list scores 1 / (RRF_K + n). For a `vague` query (keyword
    candidates by recency, not bm25) the lists are fused instead (`reciprocal_rank_fusion`)."""
    if vague:
        return Fused(reciprocal_rank_fusion(keyword, vector))
    ranking = list(dict.fromkeys([*keyword, *vector]))
    scores = {chunk_id: 1.0 / (RRF_K + n) for n, chunk_id in enumerate(ranking, start=1)}
    return Fused(scores, frozenset(keyword))


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
    terms: Sequence[str],
    now: float,
    k: int,
) -> list[Hit]:
    """The best k hits: the candidates `ahead` first, each part by score and tie-breaks; at
    most PER_PATH per path, identical texts once (HISTORY.md and its monthly file hold the
    same entries)."""
    order = sorted(
        (i in fused.ahead, score + tie_break(row, now=now), i)
        for i, row in rows.items()
        if (score := fused.scores.get(i)) is not None
    )
    hits: list[Hit] = []
    per_path: dict[str, int] = {}
    seen: set[str] = set()
    for _, score, chunk_id in reversed(order):
        row = rows[chunk_id]
        text = " ".join(row.text.split())
        if per_path.get(row.path, 0) >= PER_PATH or text in seen:
            continue
        per_path[row.path] = per_path.get(row.path, 0) + 1
        seen.add(text)
        hits.append(_hit(row, score, terms))
        if len(hits) == k:
            break
    return hits


def _hit(row: ChunkRow, score: float, terms: Sequence[str]) -> Hit:
    return Hit(
        path=row.path,
        start_line=row.start_line,
        end_line=row.end_line,
        text=snippet(row.text, terms),
        score=round(score, 6),
        kind=row.kind,
        scope=row.scope,
        at=datetime.fromtimestamp(row.at, tz=UTC),
    )


def snippet(text: str, terms: Sequence[str], limit: int = SNIPPET_CHARS) -> str:
    """The text if it is short, else a window of `limit` characters from a little before
    the first query term found (from the start when none is), marked with "…"."""
    if len(text) <= limit:
        return text
    lowered = text.lower()
    found = [at for term in terms if (at := lowered.find(term)) >= 0]
    start = max(0, min(found) - limit // 7) if found else 0
    line_start = text.rfind("\n", 0, start) + 1
    if start - line_start < limit // 7:
        start = line_start
    start = min(start, len(text) - limit)
    body = text[start : start + limit].strip()
    return ("…" if start > 0 else "") + body + ("…" if start + limit < len(text) else "")
