"""A pack's scores and its top k per layer; the formula is in `retrieval`'s docstring.

A pack weighs every candidate each turn (hundreds in a year-old workspace) but shows a few
dozen. So `Scored` keeps each candidate's total as a plain number and makes a `Candidate` (with
its score parts) only for those the top-k walk reaches; every candidate and the top-k cuts are
made when the pack's diagnostics are read (`Explain`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.memory.recall.overlap import Shown
from bot.memory.recall.pack import PRIORITY, Candidate, Cut, PackLayer, Score
from bot.models import MemoryItem, MemoryLayer

W_RELEVANCE, W_RECENCY, W_SALIENCE, W_CONFIDENCE = 0.5, 0.2, 0.2, 0.1
LAYER_WEIGHTS = {MemoryLayer.SEMANTIC: 1.0, MemoryLayer.PROCEDURAL: 0.9, MemoryLayer.EPISODIC: 0.8}
HALF_LIFE_DAYS = {MemoryLayer.EPISODIC: 7, MemoryLayer.PROCEDURAL: 30, MemoryLayer.SEMANTIC: 90}
_HALF_LIFE_SECONDS = {layer: days * 86400.0 for layer, days in HALF_LIFE_DAYS.items()}
LAYERS: Mapping[MemoryLayer, PackLayer] = {
    MemoryLayer.EPISODIC: "episodic",
    MemoryLayer.SEMANTIC: "semantic",
    MemoryLayer.PROCEDURAL: "procedural",
}


@dataclass(frozen=True)
class TopK:
    working: int = 6
    episodic: int = 8
    semantic: int = 6
    procedural: int = 4

    def of(self, layer: PackLayer) -> int:
        return int(getattr(self, layer))


def working_score(relevance: float) -> Score:
    return Score(_total(1.0, relevance, 1.0, 1.0, 1.0), relevance, 1.0, 1.0, 1.0, 1.0)


def _score(relevance: float, recency: float, item: MemoryItem, weight: float) -> Score:
    total = _total(weight, relevance, recency, item.salience, item.confidence)
    return Score(total, relevance, recency, item.salience, item.confidence, weight)


def _total(weight: float, r: float, t: float, s: float, c: float) -> float:
    return weight * (W_RELEVANCE * r + W_RECENCY * t + W_SALIENCE * s + W_CONFIDENCE * c)


class Scored:
    """The candidates of one pack: working-memory lines first, then items, with their
    relevance (each list scaled to its best)."""

    def __init__(
        self,
        lines: Sequence[str],
        on_lines: Sequence[float],
        items: Sequence[MemoryItem],
        on_items: Sequence[float],
        now: datetime,
    ) -> None:
        self.lines, self.on_lines = lines, on_lines
        self.items, self.on_items = items, on_items
        self.layers: list[PackLayer] = ["working"] * len(lines)
        self.layers += [LAYERS[item.layer] for item in items]
        stamp = now.timestamp()
        self.recency = [  # 0.5 ** (days since written / the layer's half-life)
            0.5 ** (max(stamp - i.updated_at.timestamp(), 0.0) / _HALF_LIFE_SECONDS[i.layer])
            for i in items
        ]
        self.totals = [_total(1.0, r, 1.0, 1.0, 1.0) for r in on_lines]
        self.totals += [
            _total(LAYER_WEIGHTS[i.layer], r, t, i.salience, i.confidence)
            for i, r, t in zip(items, on_items, self.recency, strict=True)
        ]
        self._groups: dict[PackLayer, list[int]] = {layer: [] for layer in PRIORITY}
        for n, layer in enumerate(self.layers):
            self._groups[layer].append(n)
        for layer, group in self._groups.items():
            if layer != "working":
                group.reverse()  # items come oldest file first: on a tie the newer wins
        self._made: dict[int, Candidate] = {}
        self._kept: set[int] = set()

    @property
    def offered(self) -> dict[PackLayer, int]:
        return {layer: len(group) for layer, group in self._groups.items()}

    def candidate(self, n: int) -> Candidate:
        """The n-th candidate (made once)."""
        if (made := self._made.get(n)) is not None:
            return made
        if n < len(self.lines):
            score = working_score(self.on_lines[n])
            made = Candidate(f"working#{n}", "working", score, text=self.lines[n], position=n)
        else:
            m = n - len(self.lines)
            item = self.items[m]
            score = _score(self.on_items[m], self.recency[m], item, LAYER_WEIGHTS[item.layer])
            made = Candidate(item.id, LAYERS[item.layer], score, item=item)
        self._made[n] = made
        return made

    def top_k(self, k: TopK, *, shown: Shown) -> list[Candidate]:
        """Each layer's best `k.of(layer)` candidates that `shown` does not hold yet (each kept
        item is added to it); the newer item first on a tie."""
        kept: list[Candidate] = []
        for layer in PRIORITY:
            room = k.of(layer)
            for n in sorted(self._groups[layer], key=self.totals.__getitem__, reverse=True):
                if room == 0:
                    break
                candidate = self.candidate(n)
                if candidate.item is not None:
                    if shown.holds(candidate.item.text):
                        continue
                    shown.add(candidate.item.text)
                kept.append(candidate)
                self._kept.add(n)
                room -= 1
        return kept

    # Explain (read by diagnostics only)

    def candidates(self) -> list[Candidate]:
        return [self.candidate(n) for n in range(len(self.layers))]

    def top_k_cuts(self) -> list[Cut]:
        cuts: list[Cut] = []
        for layer, group in self._groups.items():
            left = [n for n in group if n not in self._kept]
            cuts += [Cut(self.candidate(n).key, layer, "top_k", self.totals[n], 0) for n in left]
        return cuts
