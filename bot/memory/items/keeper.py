"""The item keeper: every change to structured items goes through `ItemKeeper` (called by the
one writer, `bot.memory.writer.MemoryWriter`).

- `keep_turn`: a finished turn's items (`turn_items`), from system 50.
- `add_facts`: SEMANTIC facts from memory tags and consolidation.
- `add` / `update` / `promote` / `forget`: the model's memory tools.
- `follow`: the semantic items made of MEMORY.md lines follow them (`truth`).
- `decay`: lower the salience of items unused for `decay_days` (scheduled by the caller).

Every write is an upsert (see `items`): an item whose fingerprint is already in the same layer
and scope reinforces that item instead of adding one (episodic items are compared with the
last `dedup_days` of episodic files; a forgotten item is never revived, its twin is added
anew). An episodic fact, preference or constraint that reaches `promotion_min_confidence` is
copied to the semantic layer. Each write holds its layer's lock; file work runs in a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta

from bot.memory.items.code import find_code
from bot.memory.items.rules import (
    can_promote,
    decayed,
    fingerprint,
    new_item,
    promoted,
    reinforce,
    unit,
)
from bot.memory.items.statements import kind_of
from bot.memory.items.store import ItemStore
from bot.memory.items.truth import follow
from bot.memory.items.turn import (
    TurnMemoryEvent,
    command_items,
    episode,
    error_fix_item,
    error_items,
    fix_text,
    is_open,
    statement_items,
)
from bot.memory.lines import bare
from bot.models import MemoryItem, MemoryLayer, MemoryScope, Provenance
from bot.settings import MemorySettings

Change = Callable[[MemoryItem], MemoryItem]


class ItemKeeper:
    def __init__(
        self,
        store: ItemStore,
        *,
        now: Callable[[], datetime],
        promotion_min_confidence: float | None = 0.75,  # None: no automatic promotion
        decay_days: int | None = 30,  # None: `decay` does nothing
        code_aware: bool = True,
        dedup_days: int = 30,
        user_chars: int = 200,
        assistant_chars: int = 300,
    ) -> None:
        self.store = store
        self.now = now
        self.promotion_min_confidence = promotion_min_confidence
        self.decay_after = None if decay_days is None else timedelta(days=decay_days)
        self.code_aware = code_aware
        self.dedup_window = timedelta(days=dedup_days)
        self.user_chars = user_chars
        self.assistant_chars = assistant_chars

    @classmethod
    def from_settings(
        cls, config: MemorySettings, store: ItemStore, now: Callable[[], datetime]
    ) -> ItemKeeper:
        items = config.items
        return cls(
            store,
            now=now,
            promotion_min_confidence=(
                items.promotion_min_confidence if items.promotion_enabled else None
            ),
            decay_days=items.decay_days if items.decay_enabled else None,
            code_aware=items.code_aware_extraction,
            dedup_days=items.episodic_days,
            user_chars=config.note_user_chars,
            assistant_chars=config.note_assistant_chars,
        )

    # ------------------------------------------------------------------ writes from the bot

    async def keep_turn(self, event: TurnMemoryEvent) -> list[MemoryItem]:
        """Store the turn's items; every item written or reinforced (promotions included)."""
        turn = episode(event, user_chars=self.user_chars, assistant_chars=self.assistant_chars)
        written = await self._put_all([turn, *statement_items(event)])
        if self.code_aware:
            written += await self._procedures(event)
        return written

    async def add_facts(
        self,
        scope: MemoryScope,
        facts: Iterable[str],
        *,
        sources: Sequence[str],  # references: "MEMORY.md#L12", "sessions/<key>#turn-<id>"
        confidence: float = 0.7,
        salience: float = 0.7,
        origin: Provenance | None = None,
    ) -> list[MemoryItem]:
        """SEMANTIC items typed fact / preference / constraint (see `statements.kind_of`)."""
        at = self.now()
        items = [
            replace(item, provenance=origin)
            for item in self._facts(scope, facts, at, confidence, salience, sources)
        ]
        return await self._put_all(items)

    def _facts(
        self,
        scope: MemoryScope,
        facts: Iterable[str],
        at: datetime,
        confidence: float,
        salience: float,
        sources: Sequence[str],
    ) -> list[MemoryItem]:
        return [
            new_item(
                MemoryLayer.SEMANTIC,
                kind_of(fact),
                fact,
                scope=scope,
                at=at,
                confidence=confidence,
                salience=salience,
                references=sources,
            )
            for fact in facts
            if fact.strip()
        ]

    # ------------------------------------------------------------------ the model's tools

    async def add(
        self,
        scope: MemoryScope,
        layer: MemoryLayer,
        text: str,
        *,
        type: str = "fact",
        confidence: float = 0.7,
        salience: float = 0.6,
        tags: Sequence[str] = (),
        references: Sequence[str] = (),
        origin: Provenance | None = None,
    ) -> MemoryItem:
        """Add (or reinforce) one item; the stored item. `ValueError` for an empty text."""
        made = new_item(
            layer,
            type,
            text,
            scope=scope,
            at=self.now(),
            confidence=confidence,
            salience=salience,
            tags=tags,
            references=references,
        )
        return (await self._put(replace(made, provenance=origin)))[0]

    async def update(
        self,
        scope: MemoryScope,
        item_id: str,
        *,
        text: str | None = None,
        confidence: float | None = None,
        salience: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> MemoryItem | None:
        """Change an item in place; None when the scope has no item with this id."""

        def change(item: MemoryItem) -> MemoryItem:
            new_text = item.text if text is None else text.strip()
            return replace(
                item,
                text=new_text,
                fingerprint=fingerprint(new_text),
                confidence=item.confidence if confidence is None else unit(confidence),
                salience=item.salience if salience is None else unit(salience),
                tags=item.tags if tags is None else tuple(tags),
                updated_at=self.now(),
                status="active" if item.status == "decayed" else item.status,
            )

        if text is not None and not text.strip():
            raise ValueError("an item's text cannot be empty")
        return await self._change(scope, item_id, change)

    async def promote(self, scope: MemoryScope, item_id: str) -> MemoryItem | None:
        """Copy an episodic item to the semantic layer; the semantic item, or None when the
        scope has no such episodic item (or it was forgotten)."""
        item = await asyncio.to_thread(self.store.find, scope, item_id)
        if item is None or item.layer is not MemoryLayer.EPISODIC or item.status == "forgotten":
            return None
        return (await self._put(promoted(item, self.now())))[0]

    async def retext(self, scope: MemoryScope, before: str, after: str | None) -> int:
        """The semantic items made of the line `before` now say `after` (forgotten when the
        line was deleted); how many changed."""
        old = fingerprint(before)
        items = await asyncio.to_thread(self.store.items, scope, MemoryLayer.SEMANTIC)
        changed = 0
        for item in (i for i in items if i.fingerprint == old and i.status != "forgotten"):
            if after is None:
                changed += await self.forget(scope, item.id) is not None
            else:
                changed += await self.update(scope, item.id, text=bare(after)) is not None
        return changed

    async def follow(self, scope: MemoryScope, text: str, name: str) -> int:
        """The semantic items made of lines of `name` (MEMORY.md, as `text` holds it now)
        made to agree with it (`truth.follow`); how many changed."""
        async with self.store.lock(scope, MemoryLayer.SEMANTIC):
            return await asyncio.to_thread(self._follow_locked, scope, text, name)

    def _follow_locked(self, scope: MemoryScope, text: str, name: str) -> int:
        path = self.store.home_path(scope, MemoryLayer.SEMANTIC, date.min)
        items = self.store.read(path, scope).items
        changes = follow(items, text, name, now=self.now())
        return self.store.rewrite_locked(path, scope, changes) if changes else 0

    async def forget(self, scope: MemoryScope, item_id: str) -> MemoryItem | None:
        """Mark an item forgotten (kept on disk, never shown); None when there is no such item."""
        return await self._change(
            scope, item_id, lambda item: replace(item, status="forgotten", updated_at=self.now())
        )

    # ------------------------------------------------------------------ upkeep

    async def decay(self, scope: MemoryScope) -> int:
        """Lower the salience of the scope's idle items; how many were lowered."""
        after = self.decay_after
        if after is None:
            return 0
        lowered = 0
        for layer in MemoryLayer:
            async with self.store.lock(scope, layer):
                lowered += await asyncio.to_thread(self._decay_locked, scope, layer, after)
        return lowered

    def _decay_locked(self, scope: MemoryScope, layer: MemoryLayer, after: timedelta) -> int:
        now, lowered = self.now(), 0
        for path in self.store.layer_paths(scope, layer):
            items = self.store.read(path, scope).items
            changes = {i.id: d for i in items if (d := decayed(i, now, after=after))}
            lowered += self.store.rewrite_locked(path, scope, changes)
        return lowered

    # ------------------------------------------------------------------ code-aware extraction

    async def _procedures(self, event: TurnMemoryEvent) -> list[MemoryItem]:
        user, reply = find_code(event.user_text), find_code(event.reply)
        fix = fix_text(reply)
        # a fix with no error beside it answers the last one still open (read before this
        # turn's errors are stored)
        earlier = (
            await asyncio.to_thread(self._open_error, event)
            if fix is not None and not user.errors
            else None
        )
        shown = await self._put_all(error_items(event, user.errors))
        echoed = tuple(e for e in reply.errors if e not in user.errors)
        written = [*shown, *await self._put_all(error_items(event, echoed))]
        written += await self._put_all(command_items(event, reply))
        targets = shown or ([earlier] if earlier else [])
        if fix is not None:
            written += await self._put_all(error_fix_item(event, e, fix) for e in targets)
        return written

    def _open_error(self, event: TurnMemoryEvent) -> MemoryItem | None:
        """The session's most recent error that no fix has answered yet."""
        items = self.store.items(event.scope, MemoryLayer.PROCEDURAL)
        fixes = [i for i in items if i.type == "error_fix"]
        errors = [i for i in items if is_open(i, fixes, session_key=event.session_key)]
        return max(errors, key=lambda i: i.updated_at, default=None)

    # ------------------------------------------------------------------ upsert and promotion

    async def _put_all(self, items: Iterable[MemoryItem]) -> list[MemoryItem]:
        written: list[MemoryItem] = []
        for item in items:
            written += await self._put(item)
        return written

    async def _put(self, item: MemoryItem) -> list[MemoryItem]:
        """Upsert `item`, then promote it when it qualifies: the stored item first."""
        stored = await self._upsert(item)
        limit = self.promotion_min_confidence
        if limit is None or not can_promote(stored, min_confidence=limit):
            return [stored]
        return [stored, await self._upsert(promoted(stored, self.now()))]

    async def _upsert(self, item: MemoryItem) -> MemoryItem:
        scope = item.memory_scope
        async with self.store.lock(scope, item.layer):
            return await asyncio.to_thread(self._upsert_locked, scope, item)

    def _upsert_locked(self, scope: MemoryScope, item: MemoryItem) -> MemoryItem:
        for path in reversed(self.store.layer_paths(scope, item.layer, since=self._since(item))):
            twin = self.store.read(path, scope).twin(item.fingerprint)
            if twin is not None:
                merged = reinforce(twin, item)
                self.store.rewrite_locked(path, scope, {twin.id: merged})
                return merged
        home = self.store.home_path(scope, item.layer, item.created_at.date())
        self.store.append_locked(home, item)
        return item

    def _since(self, item: MemoryItem) -> date | None:
        if item.layer is not MemoryLayer.EPISODIC:
            return None
        return (item.created_at - self.dedup_window).date()

    async def _change(self, scope: MemoryScope, item_id: str, change: Change) -> MemoryItem | None:
        layer = self.store.layer_of(item_id)
        if layer is None:
            return None
        async with self.store.lock(scope, layer):
            return await asyncio.to_thread(self._change_locked, scope, item_id, change)

    def _change_locked(self, scope: MemoryScope, item_id: str, change: Change) -> MemoryItem | None:
        item, path = self.store.find(scope, item_id), self.store.path_of(scope, item_id)
        if item is None or path is None:
            return None
        new = change(item)
        self.store.rewrite_locked(path, scope, {item_id: new})
        return new
