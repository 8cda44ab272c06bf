"""The memory pack: chosen items within a token budget, rendered as `# Memory`.

    # Memory
    ## Working Memory (updated 2 hours ago)    the session's scratchpad, its lines in order
    ## Long-term Memory                        semantic items, best first: "- …"
    ## Procedures                              procedural items, best first: "- command: `…`"
    ## Recent Context                          episodic items
    ### YYYY-MM-DD                             newest day first: "[HH:MM] User: … | Assistant: …"

    (3 more memory items not shown: available via memory search)

Budgets: candidates are taken in layer priority (working, semantic, procedural, episodic) and,
within a layer, best score first, while they fit the soft budget; a candidate that does not fit
waits. Then the waiting ones, best first, may stretch the pack up to the max budget when their
score is at least `HIGH_SCORE`. Every candidate left out is in the diagnostics with its reason
("soft_budget": not high enough to stretch; "max_budget": no room even then), and the last line
says how many were left out. The whole text, header included, is measured with the given
counter. `MemoryPack.view()` is a drop-in for `section.MemoryView`. The layers' headings may be
renamed (`headings`): system 20 shows the pack beside the markdown section (`memory_prompt`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import cached_property
from itertools import groupby
from typing import Literal, Protocol

from bot.memory.recall.section import HEADER, LONG_TERM, RECENT, WORKING, MemoryView
from bot.models import MemoryItem, MemoryLayer

Count = Callable[[str], int]
PackLayer = Literal["working", "semantic", "procedural", "episodic"]
CutReason = Literal["top_k", "soft_budget", "max_budget"]
PRIORITY: tuple[PackLayer, ...] = ("working", "semantic", "procedural", "episodic")
HEADINGS: Mapping[PackLayer, str] = {  # as the markdown section's, whose drop-in it may be
    "working": WORKING,
    "semantic": LONG_TERM,
    "procedural": "## Procedures",
    "episodic": RECENT,
}
OMITTED = "({count} more memory items not shown: available via memory search)"
HIGH_SCORE = 0.5
_PROCEDURE_LABELS = {"command": "command", "error": "error seen", "error_fix": "fix"}


@dataclass(frozen=True, slots=True)
class Score:
    """A candidate's score and its parts (the formula is in `retrieval`)."""

    total: float
    relevance: float
    recency: float
    salience: float
    confidence: float
    layer_weight: float


@dataclass(frozen=True, slots=True)
class Candidate:
    key: str  # the item's id, or "working#<n>" for the n-th line of working memory
    layer: PackLayer
    score: Score
    item: MemoryItem | None = None  # None for a working-memory line
    text: str = ""  # a working-memory line's text
    position: int = 0  # working memory: the line's place in the note

    @property
    def line(self) -> str:
        """The candidate as rendered (made only for the few that reach the budget)."""
        return self.text if self.item is None else item_line(self.item)


@dataclass(frozen=True)
class Cut:
    key: str
    layer: PackLayer
    reason: CutReason
    score: float
    tokens: int  # what the line would have cost (0 for top-k cuts: never measured)


class Explain(Protocol):
    """Every candidate a pack weighed, and those top-k passed over: made when asked."""

    def candidates(self) -> Sequence[Candidate]: ...

    def top_k_cuts(self) -> Sequence[Cut]: ...


class _Nothing:
    def candidates(self) -> Sequence[Candidate]:
        return ()

    def top_k_cuts(self) -> Sequence[Cut]:
        return ()


@dataclass(frozen=True)
class PackDiagnostics:
    candidates: Mapping[PackLayer, int]  # how many each layer offered
    budget_cuts: tuple[Cut, ...]  # what the budgets left out
    stretched: tuple[str, ...]  # keys taken past the soft budget
    tokens: int  # of the rendered text
    soft_budget: int
    max_budget: int
    explain: Explain = field(default_factory=_Nothing, repr=False, compare=False)

    @cached_property
    def scored(self) -> tuple[Candidate, ...]:
        """Every candidate with its score parts."""
        return tuple(self.explain.candidates())

    @cached_property
    def cut(self) -> tuple[Cut, ...]:
        """Everything left out, and why."""
        return (*self.explain.top_k_cuts(), *self.budget_cuts)


@dataclass(frozen=True)
class MemoryPack:
    chosen: tuple[Candidate, ...]
    diagnostics: PackDiagnostics
    rendered: str  # the whole `# Memory` section, "" when there is nothing to show

    @property
    def items(self) -> tuple[MemoryItem, ...]:
        return tuple(c.item for c in self.chosen if c.item is not None)

    @property
    def omitted(self) -> int:
        """Candidates the budget left out (announced at the end of `rendered`)."""
        return len(self.diagnostics.budget_cuts)

    def view(self) -> MemoryView:
        return MemoryView(text=self.rendered, omitted_lines=self.omitted)


@dataclass(frozen=True)
class Budget:
    soft: int
    max: int
    count: Count
    high_score: float = HIGH_SCORE


def build_pack(
    kept: Sequence[Candidate],
    *,
    budget: Budget,
    offered: Mapping[PackLayer, int],
    explain: Explain,
    working_age: str = "",
    headings: Mapping[PackLayer, str] = HEADINGS,
) -> MemoryPack:
    """Fit `kept` (the candidates top-k let through) into the budget and render the pack;
    `offered` counts each layer's candidates, `explain` lists them for the diagnostics."""
    diagnosed = functools.partial(_pack, offered=offered, explain=explain, budget=budget)
    if not kept:
        return diagnosed((), (), (), text="", tokens=0)
    count = _remembered(budget.count)  # the same lines are measured on every attempt
    reserve = count(HEADER) + count(OMITTED.format(count=len(kept))) + 4
    slack = 0
    while True:  # costs are summed per line; the joined text is what counts, so check it
        room = _Fill(budget.soft - reserve - slack, budget.max - reserve - slack, count, headings)
        chosen, cuts, stretched = room.fill(kept, high_score=budget.high_score)
        text = render(chosen, omitted=len(cuts), working_age=working_age, headings=headings)
        tokens = count(text)
        over = tokens - (budget.max if stretched else budget.soft)
        if over <= 0 or not chosen:
            return diagnosed(chosen, cuts, stretched, text=text, tokens=tokens)
        slack += over


def _remembered(count: Count) -> Count:
    known: dict[str, int] = {}

    def counted(text: str) -> int:
        if text not in known:
            known[text] = count(text)
        return known[text]

    return counted


def _pack(
    chosen: Sequence[Candidate],
    cuts: Sequence[Cut],
    stretched: Sequence[Candidate],
    *,
    text: str,
    tokens: int,
    budget: Budget,
    offered: Mapping[PackLayer, int],
    explain: Explain,
) -> MemoryPack:
    diagnostics = PackDiagnostics(
        candidates=dict(offered),
        budget_cuts=tuple(cuts),
        stretched=tuple(c.key for c in stretched),
        tokens=tokens,
        soft_budget=budget.soft,
        max_budget=budget.max,
        explain=explain,
    )
    return MemoryPack(chosen=tuple(chosen), diagnostics=diagnostics, rendered=text)


class _Fill:
    """Token accounting for one attempt: the soft room first, then the stretch up to max."""

    def __init__(
        self, soft: int, max_tokens: int, count: Count, headings: Mapping[PackLayer, str]
    ) -> None:
        self.left = soft
        self.stretch = max_tokens - soft
        self.count = count
        self.headings = headings
        self.opened: set[str] = set()

    def fill(
        self, kept: Sequence[Candidate], *, high_score: float
    ) -> tuple[list[Candidate], list[Cut], list[Candidate]]:
        chosen: list[Candidate] = []
        waiting: list[tuple[Candidate, int]] = []
        for candidate in sorted(kept, key=_priority):
            cost = self._cost(candidate)
            if cost <= self.left:
                self._take(candidate, cost, chosen)
            else:
                waiting.append((candidate, cost))
        self.stretch += self.left
        stretched: list[Candidate] = []
        cuts: list[Cut] = []
        for candidate, _ in sorted(waiting, key=lambda pair: -pair[0].score.total):
            cost = self._cost(candidate)  # a heading may be open by now
            high = candidate.score.total >= high_score
            if high and cost <= self.stretch:
                self.stretch -= cost
                self._take(candidate, 0, chosen)
                stretched.append(candidate)
            else:
                reason: CutReason = "max_budget" if high else "soft_budget"
                c = candidate
                cuts.append(Cut(c.key, c.layer, reason, c.score.total, self.count(c.line)))
        return chosen, cuts, stretched

    def _cost(self, candidate: Candidate) -> int:
        cost = self.count(candidate.line) + 1
        for heading in _headings(candidate, self.headings):
            if heading not in self.opened:
                cost += self.count(heading) + 2
        return cost

    def _take(self, candidate: Candidate, cost: int, chosen: list[Candidate]) -> None:
        self.left -= cost
        self.opened.update(_headings(candidate, self.headings))
        chosen.append(candidate)


def _headings(candidate: Candidate, headings: Mapping[PackLayer, str]) -> tuple[str, ...]:
    heading = headings[candidate.layer]
    day = _day(candidate)
    return (heading,) if day is None else (heading, f"### {day.isoformat()}")


def _priority(candidate: Candidate) -> tuple[int, float]:
    return PRIORITY.index(candidate.layer), -candidate.score.total


def _day(candidate: Candidate) -> date | None:
    item = candidate.item
    return item.created_at.date() if item and candidate.layer == "episodic" else None


# ----------------------------------------------------------------------------- rendering


def render(
    chosen: Sequence[Candidate],
    *,
    omitted: int,
    working_age: str = "",
    headings: Mapping[PackLayer, str] = HEADINGS,
) -> str:
    """The section for `chosen` (in any order), ending with the omitted count when not 0."""
    parts = [HEADER]
    for layer in PRIORITY:
        group = [c for c in chosen if c.layer == layer]
        if group:
            parts.append(_section(headings[layer], layer, group, working_age))
    if omitted:
        parts.append(OMITTED.format(count=omitted))
    return "\n\n".join(parts)


def _section(heading: str, layer: PackLayer, group: list[Candidate], working_age: str) -> str:
    if layer == "working":
        age = f" ({working_age})" if working_age else ""
        lines = [c.line for c in sorted(group, key=lambda c: c.position)]
        return "\n".join([heading + age, *lines])
    if layer != "episodic":
        lines = [c.line for c in sorted(group, key=lambda c: -c.score.total)]
        return "\n".join([heading, *lines])
    by_time = sorted(group, key=_created, reverse=True)
    days = [
        "\n".join([f"### {day}", *(c.line for c in reversed(list(same)))])
        for day, same in groupby(by_time, key=_day)
    ]
    return heading + "\n" + "\n\n".join(days)


def _created(candidate: Candidate) -> datetime:
    item = candidate.item
    return item.created_at if item else datetime.min.replace(tzinfo=UTC)


def item_line(item: MemoryItem) -> str:
    """How an item reads in the pack (one line)."""
    text = " ⏎ ".join(line.strip() for line in item.text.splitlines() if line.strip())
    if item.layer is MemoryLayer.SEMANTIC:
        return f"- {text}"
    if item.layer is MemoryLayer.PROCEDURAL:
        label = _PROCEDURE_LABELS.get(item.type, item.type)
        return f"- {label}: `{text}`" if item.type == "command" else f"- {label}: {text}"
    kind = "" if item.type == "turn" else f"{item.type}: "
    return f"[{item.created_at:%H:%M}] {kind}{text}"
