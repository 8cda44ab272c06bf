"""The memory parts of the system prompt: one `# Memory` section, then `# Relevant Memory`.

How the markdown section and the memory pack combine (the decision):

- The pack is always asked for, and the markdown section (`MarkdownMemory`) is always kept:
  MEMORY.md, chat memory, working memory, today's notes and the recent days are the user's own
  words, hand edits included. They come first, as they are, within `prompt_budget_tokens`.
- The pack adds the structured items after them, under the same `# Memory` header, within its
  own soft/max budget and with headings of its own (`HEADINGS`): semantic items are
  "Remembered Facts", episodic ones "Earlier Episodes", so no heading appears twice. Working
  memory is the markdown part's (the pack is asked without it).
- No item repeats what the markdown part shows (a tag's fact in MEMORY.md, a turn in today's
  notes), nor another item; no hit of `# Relevant Memory` repeats either, nor a turn of the
  conversation the prompt carries anyway (`overlap` owns the rule).
- With no items to add the section is exactly the markdown one; with no markdown memory it is
  the pack alone. When the pack fails (logged) or there is no retriever, the markdown section
  is the fallback. The notices of what each part left out go last.
- `# Relevant Memory` follows, without the hits `# Memory` already holds (`relevant`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from bot.index.search import Hit
from bot.memory.recall import pack as packs
from bot.memory.recall import section
from bot.memory.recall.markdown import MarkdownMemory
from bot.memory.recall.relevant import RelevantMemory
from bot.memory.recall.retrieval import MemoryQuery, MemoryRetriever, TopK
from bot.memory.scopes import search_scopes, visible_scopes
from bot.models import MemoryItem, MemoryScope

log = structlog.get_logger(__name__)

HEADINGS: Mapping[packs.PackLayer, str] = {
    "working": "## Working Memory",
    "semantic": "## Remembered Facts",
    "procedural": "## Procedures",
    "episodic": "## Earlier Episodes",
}
_CLOCK = re.compile(r"^\[\d{1,2}:\d{2}\]\s*")
_FENCE = re.compile(r"(?:```|~~~)[\w+-]*")  # as `turn_items` folds an episode


@dataclass(frozen=True)
class PackLimits:
    """The pack's share of the prompt (`memory.items` settings)."""

    top_k: TopK = field(default_factory=TopK)
    soft_budget_tokens: int = 1800
    max_budget_tokens: int = 3500


@dataclass(frozen=True)
class PromptMemory:
    memory: str  # the `# Memory` section, "" when there is no memory
    relevant: str  # the `# Relevant Memory` section, "" when nothing new was found
    items: tuple[MemoryItem, ...]  # the structured items `memory` shows


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

    async def sections(
        self,
        scope: MemoryScope,
        session_key: str,
        query: str,
        moment: datetime,
        *,
        conversation: frozenset[str] = frozenset(),  # the exchanges the prompt carries whole
    ) -> PromptMemory:
        view = await self.recall.view(scope, session_key, moment.date())
        pack, hits = await asyncio.gather(  # the pack's scoring beside the index's query
            self._pack(scope, session_key, query, view),
            self._hits(scope, session_key, query),
        )
        memory = combine(view, pack)
        relevant = (
            self.relevant.section(hits, shown=memory, conversation=conversation)
            if self.relevant
            else ""
        )
        return PromptMemory(memory, relevant, pack.items if pack else ())

    async def _hits(self, scope: MemoryScope, session_key: str, query: str) -> list[Hit]:
        if self.relevant is None:
            return []
        return await self.relevant.find(query, search_scopes(scope, session_key))

    async def _pack(
        self,
        scope: MemoryScope,
        session_key: str,
        query: str,
        view: section.MemoryView,
    ) -> packs.MemoryPack | None:
        if self.retriever is None:
            return None
        request = MemoryQuery(
            text=query,
            scopes=visible_scopes(scope, session_key),
            top_k=self.limits.top_k,
            soft_budget_tokens=self.limits.soft_budget_tokens,
            max_budget_tokens=self.limits.max_budget_tokens,
            shown=view.text,
            headings=HEADINGS,
        )
        try:
            return await self.retriever.pack(request, mark_used=False)
        except Exception:  # the pack is best-effort: the markdown section stands alone
            log.warning("memory_pack_failed", exc_info=True)
            return None


def combine(view: section.MemoryView, pack: packs.MemoryPack | None) -> str:
    """One `# Memory` section: the markdown parts, the pack's item parts, then the notices."""
    if pack is None or not pack.rendered:
        return view.text
    if not view.text:
        return pack.rendered
    markdown, markdown_notice = _split(view.text, section.OMITTED, view.omitted_lines)
    items, items_notice = _split(pack.rendered, packs.OMITTED, pack.omitted)
    body = items.removeprefix(section.HEADER).strip("\n")
    parts = [markdown, body, markdown_notice, items_notice]
    return "\n\n".join(part for part in parts if part)


def _split(text: str, notice: str, omitted: int) -> tuple[str, str]:
    """The text without its closing "N more … not shown" notice, and the notice."""
    if not omitted:
        return text, ""
    line = notice.format(count=omitted)
    return text.removesuffix(line).rstrip("\n"), line
