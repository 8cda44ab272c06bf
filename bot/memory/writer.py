"""The one writer: every change to memory goes through `MemoryWriter`, in one direction —
the markdown files first (the truth), then the structured items made of them (each citing its
file line or session turn), then the search index (derived, synced from the files).

    system 17, 40   store_tags        <memory> / <chat-memory> → MEMORY.md line → fact item
                                      (from a turn with others' words: QUOTED.md instead)
                                      <working-memory> → the session's working memory
    system 50       record_turn       the daily note line → the turn's items (and which files)
                    mark_used         the items the prompt showed
    /keep, buttons  keep_quoted       QUOTED.md line → MEMORY.md line → fact item → index
    /remember       remember          MEMORY.md line → fact item → index
    /forget, /undo, forget, undo      every place a text is (files, items, sessions) → index
    memory_forget                     (scrubbed); undo puts it back within minutes
    memory_add/update/promote         items → index
    memory_edit     edit_line         a MEMORY.md line replaced or deleted → its items → index
    Undo (receipt)  restore           the lines one write touched put back → their items → index
    /new, renewal   clear_working     the session's working memory (its archived session → index)
    consolidation   replace_memory    MEMORY.md rewritten if unchanged → items of new lines → index
                    merge_facts       new lines appended → items → index
    consolidation,  append_history    an entry (or a compaction's checkpoint) in HISTORY
    compaction
    system 19       follow_files      MEMORY.md changed (by hand, consolidation) → its items → index
    memory page     edit_by_hand      MEMORY.md as a person sent it, merged → its items → index
    upkeep          decay             idle items lose salience → index
                    archive_notes     notes past retention → archive/ → index

MEMORY.md's facts — their items, provenance, quotes, and items following the file — are
`facts.FactWriter`'s. Systems, commands and tools hand it what happened; they do not write
memory themselves. Within a turn the index syncs the files the turn wrote, after it (system
55, told them by system 50); outside a turn (a command, a tool) the writer syncs it.
Each store is locked and atomic where it lives (`notes/`, `items/`); a failure of the items or
the index is logged and never undoes the markdown, which is what counts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Protocol, TypeVar

import structlog

from bot.memory.facts import TAGGED_SECTION, FactWriter, IndexSync, Stored, attempt
from bot.memory.forgetting import Forgetting, Forgotten, Undone
from bot.memory.items.keeper import ItemKeeper
from bot.memory.items.turn import TurnMemoryEvent
from bot.memory.notes.daily import DailyNotes
from bot.memory.notes.history import HistoryLog
from bot.memory.notes.long_term import LineEdit, LongTermMemory, MemoryText, new_lines
from bot.memory.notes.merge import Merged
from bot.memory.notes.quoted import Quote
from bot.memory.notes.tags import ExtractedTags
from bot.memory.notes.working import WorkingMemory
from bot.memory.trust import TurnOrigin
from bot.memory.upkeep.archiving import archive_notes
from bot.models import MemoryItem, MemoryLayer, MemoryScope, Provenance, StoredLine
from bot.storage.files import Locks
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)
T = TypeVar("T")


class UsageMarker(Protocol):
    """Marks items used (`MemoryRetriever.touch`: at most once an hour each)."""

    async def touch(self, items: Sequence[MemoryItem], at: datetime) -> None: ...


@dataclass(frozen=True)
class TurnRecord:
    """What `record_turn` wrote."""

    items: list[MemoryItem]  # written or reinforced
    paths: tuple[Path, ...]  # the files: the daily note, the items' files


class MemoryWriter:
    def __init__(
        self,
        workspace: Workspace,
        locks: Locks,
        *,
        long_term: LongTermMemory,
        history: HistoryLog,
        notes: DailyNotes,
        working: WorkingMemory,
        items: ItemKeeper | None = None,  # None: no structured items
        usage: UsageMarker | None = None,
        index: IndexSync | None = None,  # None: no search index
        forgetting: Forgetting | None = None,  # None: /forget finds nothing
    ) -> None:
        self.workspace = workspace
        self.locks = locks
        self.long_term = long_term
        self.history = history
        self.notes = notes
        self.working = working
        self.items = items
        self.usage = usage
        self.index = index
        self.forgetting = forgetting
        self.facts = FactWriter(workspace, locks, long_term=long_term, items=items, index=index)

    # ------------------------------------------------------------------ a turn

    async def record_turn(self, turn: TurnMemoryEvent) -> TurnRecord:
        """The turn's daily note line, then its items; both best-effort (logged)."""
        note = self.workspace.daily_note_path(turn.scope, turn.at.date())
        try:
            await self.notes.append(
                turn.scope, turn.at, turn.user_text, turn.reply, messages=turn.joins
            )
        except OSError:
            log.warning("daily_note_failed", exc_info=True)
        if self.items is None:
            return TurnRecord([], (note,))
        items = await attempt("turn_items", self.items.keep_turn(turn), default=[])
        return TurnRecord(items, (note, *self._item_paths(items)))

    def _item_paths(self, items: Sequence[MemoryItem]) -> list[Path]:
        """The files that hold `items` (an episodic day, semantic, procedural)."""
        if self.items is None:
            return []
        paths = (self.items.store.path_of(item.memory_scope, item.id) for item in items)
        return list(dict.fromkeys(path for path in paths if path is not None))

    async def mark_used(self, items: Sequence[MemoryItem], at: datetime) -> None:
        if self.usage is not None and items:
            await attempt("items_used", self.usage.touch(items, at), default=None)

    async def store_tags(
        self,
        tags: ExtractedTags,
        *,
        scope: MemoryScope,
        session_key: str,
        turn: str | None,
        origin: TurnOrigin | None = None,
    ) -> Stored:
        """Every kind of tag `tags` holds: `<memory>` in the turn's scope (global only in an
        owner's private chat, `bot.memory.scopes`), `<chat-memory>` in this chat's own memory.
        A fact that is not the person's own — from a turn that carried other people's words,
        or drawn from others' words memory brought back (`TurnOrigin.source_of`) — is kept as
        quoted material with its source instead, until an owner keeps it (`keep_quoted`)."""
        ok, items, quotes = True, list[MemoryItem](), list[Quote]()
        added: list[StoredLine] = []
        chat = MemoryScope(chat_key=session_key)
        found = (("memory", scope, tags.memories), ("chat-memory", chat, tags.chat_memories))
        for tag, where, all_facts in found:
            facts, others = origin.whose(all_facts) if origin else (list(all_facts), {})
            for source, texts in others.items():
                quotes += await self.facts.quote(where, texts, source)
            if facts:
                stored = await self.facts.tagged(
                    tag,
                    where,
                    facts,
                    turn=(session_key, turn),
                    origin=origin.said if origin else None,
                )
                ok, items = ok and stored.ok, [*items, *stored.items]
                added += stored.added
        if tags.working_memory is not None:
            write = _done(self.working.write(session_key, tags.working_memory))
            ok &= await attempt("working-memory", write, default=False)
        log.info(
            "memory_tags",
            memories=len(tags.memories),
            chat_memories=len(tags.chat_memories),
            working_memory=tags.working_memory is not None,
            stored=ok,
            items=len(items),
            quoted=len(quotes),
        )
        return Stored(ok, tuple(items), quoted=tuple(quotes), added=tuple(added))

    # ------------------------------------------------------------------ a person's commands

    async def remember(
        self, scope: MemoryScope, fact: str, origin: Provenance | None = None
    ) -> StoredLine | None:
        """Add `fact` to the scope's MEMORY.md: its line as saved (and what it superseded), or
        None when it was there. `NotTextError` when MEMORY.md is not text (left as it is)."""
        done = await self.long_term.append_facts(
            scope, [fact], section=TAGGED_SECTION, origin=origin
        )
        if done.added:
            await self.facts.items_of(scope, done.added, extra=(), origin=origin)
            await self.sync_index()
        return done.stored(scope)[0] if done.added else None

    # ------------------------------------------------------------------ consolidation, compaction

    def snapshot(self, scope: MemoryScope) -> MemoryText:
        """MEMORY.md as it is now, with its digest (blocking)."""
        return self.long_term.snapshot(scope)

    async def replace_memory(
        self, scope: MemoryScope, seen: MemoryText, text: str, origin: Provenance | None = None
    ) -> bool:
        """Consolidation's rewrite of MEMORY.md, applied only if the file is still what the
        model saw (a hand edit is never overwritten): False when it changed. The lines it adds
        become items. `NotTextError` for a file that is not text."""
        if not await self.long_term.replace_if_unchanged(scope, seen.digest, text):
            return False
        added = new_lines(text, seen=seen.text, current=seen.text)
        if origin is not None:
            await self.facts.origins(scope, added, origin)
        await self.facts.items_of(scope, added, extra=(), origin=origin)
        await self.sync_index()
        return True

    async def merge_facts(
        self,
        scope: MemoryScope,
        facts: Sequence[str],
        *,
        section: str,
        origin: Provenance | None = None,
    ) -> list[str]:
        """Facts appended under `## section` (those not there yet), then their items."""
        done = await self.long_term.append_facts(scope, facts, section=section, origin=origin)
        if done.added:
            await self.facts.items_of(scope, done.added, extra=(), origin=origin)
            await self.sync_index()
        return done.added

    async def append_history(
        self, scope: MemoryScope, entry: str, at: datetime, *, key: str | None = None
    ) -> None:
        """A consolidation's entry, or a compaction's checkpoint, in HISTORY (and its month);
        an entry with a `key` is written to each file once, however often it is appended."""
        await self.history.append(scope, entry, at, key=key)

    async def history_entry(self, scope: MemoryScope, key: str) -> str | None:
        """The text of the HISTORY.md entry written under `key`, if there is one."""
        return await self.history.entry(scope, key)

    # ------------------------------------------------------------------ upkeep

    async def decay(self, scope: MemoryScope) -> int:
        """Lower the salience of the scope's idle items (the index follows)."""
        if self.items is None:
            return 0
        lowered = await self.items.decay(scope)
        if lowered:
            await self.sync_index()
        return lowered

    async def archive_notes(self, scope: MemoryScope, *, before: date) -> int:
        """Move the scope's daily notes of days before `before` to its archive (the index
        follows: they stay searchable)."""
        moved = await archive_notes(self.workspace, self.locks, scope, before=before)
        if moved:
            await self.sync_index()
        return moved

    async def forget(self, scope: MemoryScope, session_key: str, needle: str) -> Forgotten:
        """Remove `needle` from every place this chat's memory holds it (`forgetting`), then
        from the index, leaving no trace in its files."""
        if self.forgetting is None:
            return Forgotten({}, (), ())
        forgotten = await self.forgetting.forget(scope, session_key, needle)
        if forgotten.total and self.index is not None:
            await self.index.scrub()
        return forgotten

    async def undo(self, session_key: str) -> tuple[Undone | None, bool]:
        """Put back what this chat's last forget removed: (what was done, whether it was too
        late)."""
        if self.forgetting is None:
            return None, False
        if await self.forgetting.expired(session_key):
            return None, True
        undone = await self.forgetting.restore(session_key)
        if undone is not None:
            await self.sync_index()
        return undone, False

    # ------------------------------------------------------------------ the model's item tools

    async def add_item(
        self,
        scope: MemoryScope,
        layer: MemoryLayer,
        text: str,
        *,
        type: str = "fact",
        tags: Sequence[str] = (),
        origin: Provenance | None = None,
    ) -> MemoryItem:
        item = await self._item_keeper().add(
            scope, layer, text, type=type, tags=tags, origin=origin
        )
        await self.sync_index()
        return item

    async def update_item(
        self,
        scope: MemoryScope,
        item_id: str,
        *,
        text: str | None = None,
        confidence: float | None = None,
        salience: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> MemoryItem | None:
        item = await self._item_keeper().update(
            scope, item_id, text=text, confidence=confidence, salience=salience, tags=tags
        )
        await self.sync_index()
        return item

    async def promote_item(self, scope: MemoryScope, item_id: str) -> MemoryItem | None:
        item = await self._item_keeper().promote(scope, item_id)
        await self.sync_index()
        return item

    def _item_keeper(self) -> ItemKeeper:
        if self.items is None:
            raise RuntimeError("structured items are off")
        return self.items

    async def edit_line(
        self, scope: MemoryScope, old: str, new: str, *, supersedes: Provenance | None = None
    ) -> LineEdit:
        """The model's correction of MEMORY.md (or chat memory), `FactWriter.edit`."""
        return await self.facts.edit(scope, old, new, supersedes=supersedes)

    async def restore(self, stored: StoredLine) -> LineEdit:
        """A receipt's Undo, `FactWriter.restore`."""
        return await self.facts.restore(stored)

    def find(self, scope: MemoryScope, item_id: str) -> MemoryItem | None:
        """The scope's item with this id (blocking; for `memory_forget`)."""
        return self.items.store.find(scope, item_id) if self.items is not None else None

    async def clear_working(self, session_key: str) -> None:
        """Clear the session's working memory, after /new or a renewal moved the session into
        the archive: a walk of the index (soon, not awaited) finds the archived file."""
        await self.working.clear(session_key)
        if self.index is not None:
            self.index.request(walk=True)

    async def sync_index(self) -> None:
        if self.index is not None:
            await self.index.sync()

    # ------------------------------------------------------------------ quoted material, truth

    def pending_quotes(self, scope: MemoryScope) -> list[Quote]:
        """The scope's quoted material waiting for an owner (blocking)."""
        return self.facts.pending(scope)

    async def keep_quoted(self, scope: MemoryScope, quote_id: str) -> Quote | None:
        """An owner keeps a quote: it leaves QUOTED.md and becomes a MEMORY.md fact (and its
        item), with the provenance it was quoted with; None when the scope has no such quote.
        The one promotion of quoted material (the `/keep` command, a receipt's button)."""
        quote = await self.facts.take(scope, quote_id)
        if quote is None:
            return None
        done = await self.long_term.append_facts(
            scope, [quote.text], section=TAGGED_SECTION, origin=quote.origin
        )
        await self.facts.items_of(scope, done.added, extra=(), origin=quote.origin)
        await self.sync_index()
        return quote

    async def follow_files(self, scopes: Iterable[MemoryScope]) -> int:
        """Before memory is read: the items made of each scope's MEMORY.md lines follow the
        file when it changed since (`FactWriter.follow`); how many items changed."""
        return await self.facts.follow(scopes)

    async def edit_by_hand(self, scope: MemoryScope, seen: MemoryText, text: str) -> Merged:
        return await self.facts.by_hand(scope, seen, text)  # the memory page's (`FactWriter`)


async def _done(write: Awaitable[object]) -> bool:
    await write
    return True
