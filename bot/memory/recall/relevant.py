"""`# Relevant Memory` (seeds 000, 004): the index's best hits for the user's message, cited.

    # Relevant Memory
    - [2026-11-20.md#L3-L5] the hit's snippet, on one line
    - [sessions/telegram%3A1001#4f2a9c#L1-L2] User: … Assistant: …
    (4 more via memory_search)

Hits come only from the scopes the chat may search (`search_scopes`, DESIGN §3). A hit the
prompt already shows is skipped (`overlap`): held by `# Memory` (a MEMORY.md chunk, a daily note
shown today, an exchange whose note line is shown whole) or by a better hit, or a turn of the
conversation the prompt carries anyway. The rest are taken best first, at
most `k`, while they fit `budget_tokens` (heading and notice included); a hit too long for the
room left is passed over and the next may still fit. The notice counts the matches found but
not shown, up to what one search returns (`probe`, 3 × k: enough to say "more", cheap enough
for every turn). The search runs in a thread (`find`, beside the memory pack); a failure or a
closed index means no section (logged), never a failed turn.

A remote recall server (LightRAG) may add hits to the embedded index's: both are on the same
Reciprocal Rank Fusion scale, so they are merged by score.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import structlog

from bot.index.remote import RemoteSearch
from bot.index.search import Hit
from bot.memory.recall.overlap import Shown

log = structlog.get_logger(__name__)

HEADER = "# Relevant Memory"
MORE = "({count} more via memory_search)"
PROBE_PER_HIT = 3
MIN_LINE_TOKENS = 8  # with less room than this left, no hit line can fit
_CLOCK = re.compile(r"^\[\d{1,2}:\d{2}\]\s*")
Count = Callable[[str], int]


class Searcher(Protocol):
    """The embedded index's search (`IndexService`): blocking."""

    def search(
        self, query: str, *, scopes: Sequence[str], k: int, wait: Literal["all", "walks"]
    ) -> list[Hit]: ...


class RelevantMemory:
    def __init__(
        self,
        index: Searcher,
        count: Count,
        *,
        k: int,
        budget_tokens: int,
        remote: RemoteSearch | None = None,
    ) -> None:
        self.index = index
        self.count = count
        self.k = k
        self.budget_tokens = budget_tokens
        self.probe = PROBE_PER_HIT * k
        self.remote = remote

    async def find(self, query: str, scopes: Sequence[str]) -> list[Hit]:
        """The hits for `query`, best first; [] when off, blank, or failing (logged)."""
        if self.k <= 0 or self.budget_tokens <= 0 or not query.strip():
            return []
        try:
            return await self._search(query, scopes)
        except Exception:  # recall is best-effort: the turn goes on without the section
            log.warning("relevant_memory_failed", exc_info=True)
            return []

    def section(
        self,
        hits: Sequence[Hit],
        *,
        shown: Sequence[str],
        conversation: frozenset[str] = frozenset(),
        budget: int | None = None,  # tokens; `budget_tokens` when None
    ) -> str:
        """The section ("" when no hit is new); `shown` is what the prompt's other memory
        sections hold, `conversation` the paths of the exchanges in the prompt's messages."""
        held = Shown(shown)
        fresh = []
        for hit in hits:
            if hit.path in conversation or held.holds(hit.text):
                continue
            fresh.append(hit)
            held.add(hit.text)
        tokens = self.budget_tokens if budget is None else min(budget, self.budget_tokens)
        return render_relevant(fresh, k=self.k, budget=tokens, count=self.count)

    async def _search(self, query: str, scopes: Sequence[str]) -> list[Hit]:
        # the last turn's sync may still run: its exchange is in the conversation anyway
        search = functools.partial(self.index.search, wait="walks")
        local = await asyncio.to_thread(search, query, scopes=scopes, k=self.probe)
        if self.remote is None:
            return local
        remote = await self.remote.search(query, scopes=scopes, k=self.k)
        return sorted([*local, *remote], key=lambda hit: -hit.score)


def hit_line(hit: Hit) -> str:
    return f"- [{hit.citation}] {' '.join(hit.text.split())}"


def render_relevant(hits: Sequence[Hit], *, k: int, budget: int, count: Count) -> str:
    """The best hits, at most `k`, that fit `budget` tokens; "" when none does."""
    room = budget - count(HEADER) - count(MORE.format(count=len(hits))) - 2
    lines: list[str] = []
    for hit in hits:
        if len(lines) == k or room < MIN_LINE_TOKENS:
            break
        line = hit_line(hit)
        cost = count(line) + 1
        if cost <= room:
            lines.append(line)
            room -= cost
    if not lines:
        return ""
    more = len(hits) - len(lines)
    return "\n".join([HEADER, *lines, *([MORE.format(count=more)] if more else [])])
