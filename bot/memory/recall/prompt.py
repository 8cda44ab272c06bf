"""The memory parts of a request: `# Memory` for the system prompt, and what this one message
recalls (`# Memory for this message`, `# Relevant Memory`) for after it.

How they are placed (the decision; system 20 lays out the request):

- `# Memory` is the markdown section (`MarkdownMemory`): MEMORY.md, chat memory, working memory,
  today's notes and the recent days — the user's own words, hand edits included, within
  `prompt_budget_tokens`. It does not depend on the message, so it changes only when a file
  does: it goes in the system prompt, before the conversation, and the request's prefix stays
  the same from turn to turn (providers cache prompts by prefix).
- What depends on the message goes after it: the memory pack's structured items scored for it
  (`# Memory for this message`, within the pack's soft/max budget, with headings of its own,
  `HEADINGS`: semantic items are "Remembered Facts", episodic ones "Earlier Episodes"), then
  `# Relevant Memory`, the index's best hits (`relevant`).
- Nothing twice (`overlap` owns the rule): the exchanges the request's messages carry
  (`Carried`) are left out of the daily notes; no item repeats what `# Memory` shows or those
  exchanges, nor another item; no hit of `# Relevant Memory` repeats any of them.
- Working memory is the markdown part's (the pack is asked without it). When the pack fails
  (logged) or there is no retriever, there are no items: the markdown section stands alone.
- The three share the `room` the model's window leaves for memory (`PromptMeter.memory_room`):
  each gets its budget, at most its share of the room (`SHARES`: `# Memory` 0.55, the items
  0.10, `# Relevant Memory` 0.35), and `# Relevant Memory` takes besides what the other two
  leave of theirs unused, up to `rag.relevant_budget_tokens` (`_relevant_room`). At 128k (a
  room of ~30,000 tokens) every section has its whole budget (3,500 / 1,800 / 4,096); at 32k
  (~5,820) `# Memory` ~3,200, the items ~580, the section ~2,040; at 8k (~450) 245 / 44 /
  156.
- What gives way in a small room is the items, not `# Memory` nor the evidence (the decision,
  issue 31). `# Memory` is the user's own memory and the request's stable prefix (a prompt
  cache holds it: a turn pays for it once a conversation), and keeping its share as it was
  keeps a year of notes' recent days at 32k (tests/test_memory_years.py: at 2,443 tokens
  yesterday's notes fell out). Both the items and the section are what this one message
  recalls, read afresh each turn, and on real chats the section's turns carry the evidence:
  REALTALK (keyword, benchmarks/README.md) holds 0.59 of it in 1,024 tokens, 0.66 in 2,048 and
  0.70 in 4,096, while model-written facts beside the turns added +0.04 at the cost of their
  tokens. Each doubling costs a turn ~1,000–2,000 prompt tokens (30–60 seconds on a CPU model
  at 30 prompt tokens a second; at gpt-4o-mini's $0.15 a million, under $0.0003).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from bot.index.remote import RemoteSearch
from bot.index.search import Hit
from bot.memory.recall import pack as packs
from bot.memory.recall import section
from bot.memory.recall.markdown import MarkdownMemory
from bot.memory.recall.overlap import Shown
from bot.memory.recall.relevant import RelevantMemory
from bot.memory.recall.retrieval import MemoryQuery, MemoryRetriever
from bot.memory.recall.scoring import TopK
from bot.memory.recall.section import Count
from bot.memory.recall.sources import ItemsAndIndex
from bot.memory.scopes import search_scopes, visible_scopes
from bot.models import MemoryItem, MemoryScope
from bot.settings import ItemSettings, Settings

log = structlog.get_logger(__name__)

HEADINGS: Mapping[packs.PackLayer, str] = {  # beside `# Memory`: its two layers renamed
    **packs.HEADINGS,
    "semantic": "## Remembered Facts",
    "episodic": "## Earlier Episodes",
}


@dataclass(frozen=True)
class PackLimits:
    """The pack's share of the prompt (`memory.items` settings)."""

    top_k: TopK = field(default_factory=TopK)
    soft_budget_tokens: int = 1800
    max_budget_tokens: int = 3500

    @classmethod
    def from_settings(cls, config: ItemSettings) -> PackLimits:
        top_k = TopK(
            working=config.working_top_k,
            episodic=config.episodic_top_k,
            semantic=config.semantic_top_k,
            procedural=config.procedural_top_k,
        )
        return cls(
            top_k=top_k,
            soft_budget_tokens=config.soft_budget_tokens,
            max_budget_tokens=config.max_budget_tokens,
        )


RECALLED_HEADER = "# Memory for this message"
_BASES = 64  # chats whose `# Memory` is kept made into a `Shown` (`MemoryPrompt._base`)


@dataclass(frozen=True)
class Shares:
    """The share of the memory room each section may take at most (`SHARES`)."""

    memory: float
    items: float
    relevant: float


SHARES = Shares(memory=0.55, items=0.10, relevant=0.35)


@dataclass(frozen=True)
class Budgets:
    """What each section may take at one room (`MemoryPrompt.budgets`)."""

    memory: int  # `# Memory`'s tokens
    items: float  # the share of the pack's soft and max budgets (1.0: all of them)
    relevant: int  # `# Relevant Memory`'s own share, before what the others leave


@dataclass(frozen=True)
class Carried:
    """What the request's messages carry whole, so that no memory section repeats it."""

    paths: frozenset[str] = frozenset()  # their exchanges' citation paths (`Exchange.path`)
    notes: frozenset[str] = frozenset()  # their exchanges as note bodies (`NoteFormat.body`)


@dataclass(frozen=True)
class PromptMemory:
    memory: str  # the `# Memory` section (system prompt), "" when there is no memory
    recalled: str  # `# Memory for this message`: the pack's items, "" when none
    relevant: str  # the `# Relevant Memory` section, "" when nothing new was found
    items: tuple[MemoryItem, ...]  # the structured items `recalled` shows
    memory_parts: tuple[str, ...] = ()  # `memory`'s sections, each opening with its heading
    hits: tuple[Hit, ...] = ()  # the index's hits `relevant` shows


class MemoryPrompt:
    def __init__(
        self,
        recall: MarkdownMemory,
        *,
        retriever: MemoryRetriever | None = None,
        relevant: RelevantMemory | None = None,
        limits: PackLimits | None = None,
    ) -> None:
        self.recall = recall
        self.retriever = retriever
        self.relevant = relevant
        self.limits = limits or PackLimits()
        self._bases: dict[str, tuple[tuple[str, ...], Shown]] = {}  # by chat: `_base`

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        markdown: MarkdownMemory,
        sources: ItemsAndIndex,
        count: Count,
        *,
        remote: RemoteSearch | None = None,
    ) -> MemoryPrompt:
        """System 20's memory: the markdown section, the pack beside it, `# Relevant Memory`."""
        rag = settings.rag
        relevant = RelevantMemory(
            sources.index,
            count,
            k=rag.relevant_k,
            budget_tokens=rag.relevant_budget_tokens,
            remote=remote,
        )
        return cls(
            markdown,
            retriever=sources.retriever,
            relevant=relevant if rag.enabled else None,
            limits=PackLimits.from_settings(settings.memory.items),
        )

    async def sections(
        self,
        scope: MemoryScope,
        session_key: str,
        query: str,
        moment: datetime,
        *,
        carried: Carried = Carried(),
        room: int | None = None,  # tokens for all three sections; None: their own budgets
    ) -> PromptMemory:
        budgets = self.budgets(room)
        (view, shown, pack), hits = await asyncio.gather(  # the index's query beside the rest
            self._view_and_pack(scope, session_key, query, moment, carried, budgets),
            self._hits(scope, session_key, query, moment),
        )
        recalled = recalled_section(pack)
        held = shown.layer()
        held.add(recalled)
        relevant, shown_hits = (
            self.relevant.fitted(
                hits,
                shown=held,
                conversation=carried.paths,
                budget=self._relevant_room(room, budgets, view.text, recalled),
            )
            if self.relevant
            else ("", [])
        )
        items = pack.items if pack else ()
        return PromptMemory(
            view.text, recalled, relevant, items, memory_parts=view.parts, hits=tuple(shown_hits)
        )

    async def _view_and_pack(
        self,
        scope: MemoryScope,
        session_key: str,
        query: str,
        moment: datetime,
        carried: Carried,
        budgets: Budgets,
    ) -> tuple[section.MemoryView, Shown, packs.MemoryPack | None]:
        """The markdown section, what the prompt shows with it (its parts, most the same from
        turn to turn, then the notes the messages carry), and the pack beyond that."""
        view = await self.recall.view(
            scope,
            session_key,
            moment.date(),
            carried=carried.notes,
            budget=budgets.memory,
        )
        shown = self._base(session_key, view.parts).layer()
        shown.add("\n".join(sorted(carried.notes)))
        return view, shown, await self._pack(scope, session_key, query, shown, budgets.items)

    def _base(self, session_key: str, parts: tuple[str, ...]) -> Shown:
        """What `# Memory`'s `parts` show, made again only when they changed (they change
        with a file; a chat's turns mostly see the same): the newest `_BASES` chats'."""
        kept = self._bases.pop(session_key, None)
        base = kept[1] if kept is not None and kept[0] == parts else Shown(parts)
        self._bases[session_key] = (parts, base)  # the newest last
        if len(self._bases) > _BASES:
            del self._bases[next(iter(self._bases))]
        return base

    def budgets(self, room: int | None) -> Budgets:
        """What each section may take at `room` (`SHARES`): its budget, at most its share of
        the room; every budget whole when the room is not known."""
        relevant = self.relevant.budget_tokens if self.relevant else 0
        soft = self.limits.soft_budget_tokens
        return Budgets(
            memory=within(room, SHARES.memory, self.recall.budget_tokens),
            items=within(room, SHARES.items, soft) / soft if soft > 0 else 1.0,
            relevant=relevant_budget(room, most=relevant),
        )

    def _relevant_room(self, room: int | None, budgets: Budgets, *shown: str) -> int:
        """`# Relevant Memory`'s share of the room, and what `# Memory` and the items (`shown`)
        leave of the room unused, at most `rag.relevant_budget_tokens`."""
        if room is None or self.relevant is None:
            return budgets.relevant
        spare = room - budgets.relevant - sum(self.relevant.count(text) for text in shown)
        return min(self.relevant.budget_tokens, budgets.relevant + max(0, spare))

    async def _hits(
        self, scope: MemoryScope, session_key: str, query: str, moment: datetime
    ) -> list[Hit]:
        """The index's hits; a time the message names is read against its moment."""
        if self.relevant is None:
            return []
        return await self.relevant.find(query, search_scopes(scope, session_key), now=moment)

    async def _pack(
        self,
        scope: MemoryScope,
        session_key: str,
        query: str,
        shown: Shown,
        scale: float,  # the share of the pack's budgets (`Budgets.items`)
    ) -> packs.MemoryPack | None:
        if self.retriever is None or scale <= 0:
            return None
        request = MemoryQuery(
            text=query,
            scopes=visible_scopes(scope, session_key),
            top_k=self.limits.top_k,
            soft_budget_tokens=int(self.limits.soft_budget_tokens * scale),
            max_budget_tokens=int(self.limits.max_budget_tokens * scale),
            shown=shown,
            headings=HEADINGS,
        )
        try:
            pack = await self.retriever.pack(request, mark_used=False)
        except Exception:  # the pack is best-effort: the markdown section stands alone
            log.warning("memory_pack_failed", exc_info=True)
            return None
        log_pack(pack)
        return pack


def log_pack(pack: packs.MemoryPack) -> None:
    """The pack's diagnostics in the log (DEBUG): what each layer offered, what was shown,
    what the budgets left out and what stretched past the soft budget, and its tokens."""
    found = pack.diagnostics
    log.debug(
        "memory_pack",
        offered=dict(found.candidates),
        shown=len(pack.chosen),
        left_out=len(found.budget_cuts),
        stretched=len(found.stretched),
        tokens=found.tokens,
        budget=(found.soft_budget, found.max_budget),
    )


def within(room: int | None, share: float, budget: int) -> int:
    """`budget`, at most `share` of `room` (all of it when the room is not known)."""
    return budget if room is None else min(budget, int(share * max(0, room)))


def relevant_budget(room: int | None, *, most: int) -> int:
    """The tokens `# Relevant Memory` has at a memory `room` whatever the other sections leave
    (its share, at most `most`: `rag.relevant_budget_tokens`): what the eval measures a window
    by, as a turn gets it when `# Memory` and the items are full."""
    return within(room, SHARES.relevant, most)


def recalled_section(pack: packs.MemoryPack | None) -> str:
    """The pack's items under `RECALLED_HEADER`, its notice of what it left out last; "" when
    it holds none."""
    if pack is None or not pack.rendered:
        return ""
    return RECALLED_HEADER + pack.rendered.removeprefix(section.HEADER)
