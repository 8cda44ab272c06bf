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
  when their budgets together are more, each is scaled down by the same share.
- `# Relevant Memory` is given by the room (`RELEVANT_BY_ROOM`, at most `rag.relevant_budget_
  tokens`): a share of 4,096 tokens at a large window (a room of 16,000 tokens or more: 128k
  gives ~30,000), of 1,024 below (32k: ~5,800 for all three, its share ~950; 8k: ~460, ~70),
  and beside its share what `# Memory` and the items leave of theirs unused (`_relevant_room`:
  a year of notes keeps `# Memory` whole at 32k; a young chat's turn there shows more
  evidence). On REALTALK (keyword, benchmarks/README.md) 1,024 tokens hold 0.591 of the
  evidence, 2,048 0.660, 4,096 0.703: each doubling costs a turn ~1,000–2,000 prompt tokens
  (on a CPU model at 30 prompt tokens a second, 30–60 seconds; at gpt-4o-mini's $0.15 a
  million, under $0.0003).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from bot.index.search import Hit
from bot.memory.recall import pack as packs
from bot.memory.recall import section
from bot.memory.recall.markdown import MarkdownMemory
from bot.memory.recall.overlap import Shown
from bot.memory.recall.relevant import RelevantMemory
from bot.memory.recall.retrieval import MemoryQuery, MemoryRetriever
from bot.memory.recall.scoring import TopK
from bot.memory.scopes import search_scopes, visible_scopes
from bot.models import MemoryItem, MemoryScope

log = structlog.get_logger(__name__)

HEADINGS: Mapping[packs.PackLayer, str] = {
    "working": "## Working Memory",
    "semantic": "## Remembered Facts",
    "procedural": "## Procedures",
    "episodic": "## Earlier Episodes",
}


@dataclass(frozen=True)
class PackLimits:
    """The pack's share of the prompt (`memory.items` settings)."""

    top_k: TopK = field(default_factory=TopK)
    soft_budget_tokens: int = 1800
    max_budget_tokens: int = 3500


RECALLED_HEADER = "# Memory for this message"
RELEVANT_BY_ROOM = ((16_000, 4096), (0, 1024))  # room at least → its share's tokens
_BASES = 64  # chats whose `# Memory` is kept made into a `Shown` (`MemoryPrompt._base`)


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
        scale = self.scale(room)
        (view, shown, pack), hits = await asyncio.gather(  # the index's query beside the rest
            self._view_and_pack(scope, session_key, query, moment, carried, scale),
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
                budget=self._relevant_room(room, scale, view.text, recalled),
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
        scale: float,
    ) -> tuple[section.MemoryView, Shown, packs.MemoryPack | None]:
        """The markdown section, what the prompt shows with it (its parts, most the same from
        turn to turn, then the notes the messages carry), and the pack beyond that."""
        view = await self.recall.view(
            scope,
            session_key,
            moment.date(),
            carried=carried.notes,
            budget=int(self.recall.budget_tokens * scale),
        )
        shown = self._base(session_key, view.parts).layer()
        shown.add("\n".join(sorted(carried.notes)))
        return view, shown, await self._pack(scope, session_key, query, shown, scale)

    def _base(self, session_key: str, parts: tuple[str, ...]) -> Shown:
        """What `# Memory`'s `parts` show, made again only when they changed (they change
        with a file; a chat's turns mostly see the same): the newest `_BASES` chats'."""
        kept = self._bases.pop(session_key, None)
        base = kept[1] if kept is not None and kept[0] == parts else Shown(parts)
        self._bases[session_key] = (parts, base)  # the newest last
        if len(self._bases) > _BASES:
            del self._bases[next(iter(self._bases))]
        return base

    def scale(self, room: int | None) -> float:
        """The share of each section's budget that `room` allows (1.0: all of it): a small
        window gets the same sections, each smaller."""
        others = self.recall.budget_tokens + self.limits.soft_budget_tokens
        return shared(room, others + self._relevant_wanted(room))

    def _relevant_room(self, room: int | None, scale: float, *shown: str) -> int:
        """`# Relevant Memory`'s share of the room, and what `# Memory` and the items (`shown`)
        leave of theirs unused, at most `rag.relevant_budget_tokens`."""
        share = int(self._relevant_wanted(room) * scale)
        if room is None or self.relevant is None:
            return share
        spare = room - share - sum(self.relevant.count(text) for text in shown)
        return min(self.relevant.budget_tokens, share + max(0, spare))

    def _relevant_wanted(self, room: int | None) -> int:
        if self.relevant is None:
            return 0
        return relevant_wanted(room, most=self.relevant.budget_tokens)

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
        scale: float,
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


def relevant_wanted(room: int | None, *, most: int) -> int:
    """The tokens `# Relevant Memory` asks for at a memory `room` (`RELEVANT_BY_ROOM`), at most
    `most`; `most` when the room is not known."""
    if room is None:
        return most
    return min(most, next(tokens for least, tokens in RELEVANT_BY_ROOM if room >= least))


def shared(room: int | None, wanted: int) -> float:
    """The share of what the sections want that `room` allows (1.0: all of it)."""
    return 1.0 if room is None or room >= wanted else max(0, room) / wanted


def relevant_budget(room: int | None, *, most: int, others: int) -> int:
    """The tokens `# Relevant Memory` gets at a memory `room` beside the other sections'
    `others` (what `MemoryPrompt.sections` gives it): what the eval measures a window by."""
    wanted = relevant_wanted(room, most=most)
    return int(wanted * shared(room, others + wanted))


def recalled_section(pack: packs.MemoryPack | None) -> str:
    """The pack's items under `RECALLED_HEADER`, its notice of what it left out last; "" when
    it holds none."""
    if pack is None or not pack.rendered:
        return ""
    return RECALLED_HEADER + pack.rendered.removeprefix(section.HEADER)
