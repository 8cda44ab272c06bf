"""Retrieval: a `MemoryQuery` in, a scored and budgeted `MemoryPack` out.

Candidates: the active items of the query's scopes and no other (`bot.memory.scopes`) — every
semantic and procedural item, episodic ones from the last `episodic_days` — and the non-blank lines
of the session's working memory, handed in with the query.

Every part of a score lies in 0–1:

    score = layer_weight × (0.5·relevance + 0.2·recency + 0.2·salience + 0.1·confidence)

- relevance: the query's BM25 score against the candidate's text (`keywords`: each item's words
  are counted once, not every turn), or the `search` callable's score when one is given,
  divided by the best candidate's; 0 for an empty query.
- recency: 0.5 ** (days since the item was last written or reinforced / the layer's half-life:
  episodic 7 days, procedural 30, semantic 90).
- layer_weight: semantic 1.0, procedural 0.9, episodic 0.8.
- a working-memory line counts as fresh, salient and sure (1.0 each, weight 1.0): it is ranked
  by relevance alone, and always scores at least `pack.HIGH_SCORE`.

Each layer keeps its top k by score, the newer item first on a tie (the rest is cut as
"top_k"), passing over an item the prompt already shows (`shown`: the markdown part's text) or
that repeats an item kept before it (a statement and its promoted copy, a fact inside a turn;
the rule is `overlap`'s; the arithmetic is `scoring`'s). Then the pack fills its budgets
(`pack`). Items shown are marked used (`last_used_at`), at most once per `touch_every`; the
store keeps the marks in memory and writes them in batches (`items.usage`).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from bot.memory.items.keywords import ItemTerms, bm25, score, terms
from bot.memory.items.store import ItemStore
from bot.memory.notes.working import WorkingNote
from bot.memory.recall.overlap import Shown
from bot.memory.recall.pack import HEADINGS, Budget, Count, MemoryPack, PackLayer, build_pack
from bot.memory.recall.scoring import Scored, TopK
from bot.models import MemoryItem, MemoryLayer, MemoryScope

# An index plugged in: (query, scopes) -> {item id: score, higher is better}; called in a thread.
ItemSearch = Callable[[str, Sequence[MemoryScope]], Mapping[str, float]]


@dataclass(frozen=True)
class MemoryQuery:
    text: str  # usually the user's message
    scopes: tuple[MemoryScope, ...]  # the scopes the chat may see (`recall.visible_scopes`)
    working: WorkingNote | None = None  # `WorkingMemory.read_fresh(session_key)`
    top_k: TopK = field(default_factory=TopK)
    soft_budget_tokens: int = 1800
    max_budget_tokens: int = 3500
    shown: Shown = field(default_factory=Shown)  # what the prompt already holds (`# Memory`)
    headings: Mapping[PackLayer, str] = field(default_factory=lambda: HEADINGS)


EPISODIC_CANDIDATES = 128  # a scope's newest episodic items a pack weighs


class MemoryRetriever:
    def __init__(
        self,
        store: ItemStore,
        count: Count,
        *,
        now: Callable[[], datetime],
        episodic_days: int = 30,
        search: ItemSearch | None = None,
        touch_every: timedelta = timedelta(hours=1),
    ) -> None:
        self.store = store
        self.count = count
        self.now = now
        self.episodic_days = episodic_days
        self.search = search
        self.touch_every = touch_every
        self._terms = ItemTerms()  # each item's words, counted once (not every turn)

    async def pack(self, query: MemoryQuery, *, mark_used: bool = True) -> MemoryPack:
        """The pack for `query` (file reads in a thread); its items are marked used unless
        the caller does that later (system 20 leaves it to system 50, after the reply)."""
        moment = self.now()
        pack = await asyncio.to_thread(self.build, query, moment)
        if mark_used:
            await self.touch(pack.items, moment)
        return pack

    def build(self, query: MemoryQuery, now: datetime) -> MemoryPack:
        """The pack, without marking anything used (blocking: reads files)."""
        items = self._items(query.scopes, now.date())
        lines = _working_lines(query.working)
        on_items, on_lines = self._relevance(query, items, lines)
        scored = Scored(lines, on_lines, items, on_items, now)
        kept = scored.top_k(query.top_k, shown=query.shown.layer())
        budget = Budget(query.soft_budget_tokens, query.max_budget_tokens, self.count)
        age = query.working.age if query.working else ""
        return build_pack(
            kept,
            budget=budget,
            offered=scored.offered,
            explain=scored,
            working_age=age,
            headings=query.headings,
        )

    def _items(self, scopes: Sequence[MemoryScope], today: date) -> list[MemoryItem]:
        """The active items a pack may show: every semantic and procedural one, and of the
        episodic ones of the last `episodic_days` the newest `EPISODIC_CANDIDATES` (a pack's
        cost stays the same however many exchanges a day holds; older episodes are found by
        `# Relevant Memory`, which searches every exchange)."""
        since = today - timedelta(days=self.episodic_days)
        found: list[MemoryItem] = []
        for scope in scopes:
            for layer in MemoryLayer:
                items = self.store.items(scope, layer, since=since)
                active = [item for item in items if item.status == "active"]
                found += active[-EPISODIC_CANDIDATES:] if layer is MemoryLayer.EPISODIC else active
        return found

    def _relevance(
        self, query: MemoryQuery, items: list[MemoryItem], lines: list[str]
    ) -> tuple[list[float], list[float]]:
        """Relevance of each item and each working line, each list scaled to its best."""
        if self.search is None:
            documents = [*(terms(line) for line in lines), *self._terms.of(items)]
            raw = score(query.text, documents)
            on_lines, on_items = raw[: len(lines)], raw[len(lines) :]
        else:
            hits = self.search(query.text, query.scopes) if query.text.strip() else {}
            on_items = [hits.get(i.id, 0.0) for i in items]
            on_lines = bm25(query.text, lines)
        return _scaled(on_items), _scaled(on_lines)

    async def touch(self, items: Sequence[MemoryItem], at: datetime) -> None:
        """Mark `items` used at `at` (those not marked within `touch_every`)."""
        stale = at - self.touch_every
        by_scope: dict[MemoryScope, list[MemoryItem]] = defaultdict(list)
        for item in items:
            if item.last_used_at is None or item.last_used_at <= stale:
                by_scope[item.memory_scope].append(item)
        for scope, group in by_scope.items():
            await self.store.touch(scope, group, at)


def _working_lines(note: WorkingNote | None) -> list[str]:
    if note is None:
        return []
    return [line.rstrip() for line in note.text.splitlines() if line.strip()]


def _scaled(scores: list[float]) -> list[float]:
    best = max(scores, default=0.0)
    return [max(s, 0.0) / best for s in scores] if best > 0 else [0.0] * len(scores)
