"""The one writer: every change to memory goes through `MemoryWriter`, in one direction —
the markdown files first (the truth), then the structured items made of them (each citing its
file line or session turn), then the search index (derived, synced from the files).

    system 17, 40   store_tags        <memory> / <chat-memory> → MEMORY.md line → fact item
                                      <working-memory> → the session's working memory
    system 50       record_turn       the daily note line → the turn's items (and which files)
                    mark_used         the items the prompt showed
    /remember       remember          MEMORY.md line → fact item → index
    /forget, /undo, forget, undo      every place a text is (files, items, sessions) → index
    memory_forget                     (scrubbed); undo puts it back within minutes
    memory_add/update/promote         items → index
    memory_edit     edit_line         a MEMORY.md line replaced or deleted → its items → index
    /new, renewal   clear_working     the session's working memory (its archived session → index)
    consolidation   replace_memory    MEMORY.md rewritten if unchanged → items of new lines → index
                    merge_facts       new lines appended → items → index
    consolidation,  append_history    an entry (or a compaction's checkpoint) in HISTORY
    compaction
    upkeep          decay             idle items lose salience → index
                    archive_notes     notes past retention → archive/ → index

Systems, commands and tools hand it what happened; they do not write memory themselves. Within
a turn the index syncs the files the turn wrote, after it (system 55, told them by system 50);
outside a turn (a command, a tool) the writer syncs it.
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

from bot.memory.forgetting import Forgetting, Forgotten, Undone
from bot.memory.items.turn import TurnMemoryEvent, turn_reference
from bot.memory.items.writer import ItemWriter
from bot.memory.notes.daily import DailyNotes
from bot.memory.notes.history import HistoryLog
from bot.memory.notes.long_term import LineEdit, LongTermMemory, MemoryText, new_lines
from bot.memory.notes.tags import ExtractedTags
from bot.memory.notes.working import WorkingMemory
from bot.memory.upkeep.archiving import archive_notes
from bot.models import MemoryItem, MemoryLayer, MemoryScope
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)
T = TypeVar("T")
TAGGED_SECTION = "Remembered"  # where tags and /remember add MEMORY.md lines


class IndexSync(Protocol):
    """The search index catching up with the files (`IndexService`)."""

    async def sync(self) -> None: ...

    async def scrub(self) -> None: ...

    def request(self, paths: Iterable[Path] = (), *, walk: bool = False) -> None: ...


class UsageMarker(Protocol):
    """Marks items used (`MemoryRetriever.touch`: at most once an hour each)."""

    async def touch(self, items: Sequence[MemoryItem], at: datetime) -> None: ...


@dataclass(frozen=True)
class TurnRecord:
    """What `record_turn` wrote."""

    items: list[MemoryItem]  # written or reinforced
    paths: tuple[Path, ...]  # the files: the daily note, the items' files


@dataclass(frozen=True)
class Stored:
    ok: bool  # False if any store failed (it is logged)
    items: tuple[MemoryItem, ...]  # the items written or reinforced


class TagSink(Protocol):
    """Where a reply's memory tags go (`MemoryWriter.store_tags`): system 40 and the memory
    flush."""

    async def store_tags(
        self, tags: ExtractedTags, *, scope: MemoryScope, session_key: str, turn: str | None
    ) -> Stored: ...


class MemoryWriter:
    def __init__(
        self,
        workspace: Workspace,
        locks: FileLocks,
        *,
        long_term: LongTermMemory,
        history: HistoryLog,
        notes: DailyNotes,
        working: WorkingMemory,
        items: ItemWriter | None = None,  # None: no structured items
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

    # ------------------------------------------------------------------ a turn

    async def record_turn(self, turn: TurnMemoryEvent) -> TurnRecord:
        """The turn's daily note line, then its items; both best-effort (logged)."""
        note = self.workspace.daily_note_path(turn.scope, turn.at.date())
        try:
            await self.notes.append(turn.scope, turn.at, turn.user_text, turn.reply)
        except OSError:
            log.warning("daily_note_failed", exc_info=True)
        if self.items is None:
            return TurnRecord([], (note,))
        items = await _attempt("turn_items", self.items.record_turn(turn), default=[])
        return TurnRecord(items, (note, *self._item_paths(items)))

    def _item_paths(self, items: Sequence[MemoryItem]) -> list[Path]:
        """The files that hold `items` (an episodic day, semantic, procedural)."""
        if self.items is None:
            return []
        paths = (self.items.store.path_of(item.memory_scope, item.id) for item in items)
        return list(dict.fromkeys(path for path in paths if path is not None))

    async def mark_used(self, items: Sequence[MemoryItem], at: datetime) -> None:
        if self.usage is not None and items:
            await _attempt("items_used", self.usage.touch(items, at), default=None)

    async def store_tags(
        self, tags: ExtractedTags, *, scope: MemoryScope, session_key: str, turn: str | None
    ) -> Stored:
        """Every kind of tag `tags` holds: `<memory>` in the turn's scope (global only in an
        owner's private chat, `bot.memory.scopes`), `<chat-memory>` in this chat's own memory."""
        ok, items = True, list[MemoryItem]()
        chat = MemoryScope(chat_key=session_key)
        found = (("memory", scope, tags.memories), ("chat-memory", chat, tags.chat_memories))
        for tag, where, facts in found:
            if facts:
                stored = await self._facts(tag, where, facts, turn=(session_key, turn))
                ok, items = ok and stored.ok, [*items, *stored.items]
        if tags.working_memory is not None:
            write = _done(self.working.write(session_key, tags.working_memory))
            ok &= await _attempt("working-memory", write, default=False)
        log.info(
            "memory_tags",
            memories=len(tags.memories),
            chat_memories=len(tags.chat_memories),
            working_memory=tags.working_memory is not None,
            stored=ok,
            items=len(items),
        )
        return Stored(ok, tuple(items))

    # ------------------------------------------------------------------ a person's commands

    async def remember(self, scope: MemoryScope, fact: str) -> str | None:
        """Add `fact` to the scope's MEMORY.md: the fact as saved, or None when it was there.
        Raises `NotTextError` when MEMORY.md is not text (it is left as it is)."""
        added = await self.long_term.append_facts(scope, [fact], section=TAGGED_SECTION)
        if added:
            await self._fact_items(scope, added, extra=())
            await self.sync_index()
        return added[0] if added else None

    # ------------------------------------------------------------------ consolidation, compaction

    def snapshot(self, scope: MemoryScope) -> MemoryText:
        """MEMORY.md as it is now, with its digest (blocking)."""
        return self.long_term.snapshot(scope)

    async def replace_memory(self, scope: MemoryScope, seen: MemoryText, text: str) -> bool:
        """Consolidation's rewrite of MEMORY.md, applied only if the file is still what the
        model saw (a hand edit is never overwritten): False when it changed. The lines it adds
        become items. `NotTextError` for a file that is not text."""
        if not await self.long_term.replace_if_unchanged(scope, seen.digest, text):
            return False
        added = new_lines(text, seen=seen.text, current=seen.text)
        await self._fact_items(scope, added, extra=())
        await self.sync_index()
        return True

    async def merge_facts(
        self, scope: MemoryScope, facts: Sequence[str], *, section: str
    ) -> list[str]:
        """Facts appended under `## section` (those not there yet), then their items."""
        added = await self.long_term.append_facts(scope, facts, section=section)
        if added:
            await self._fact_items(scope, added, extra=())
            await self.sync_index()
        return added

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
    ) -> MemoryItem:
        item = await self._item_writer().add(scope, layer, text, type=type, tags=tags)
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
        item = await self._item_writer().update(
            scope, item_id, text=text, confidence=confidence, salience=salience, tags=tags
        )
        await self.sync_index()
        return item

    async def promote_item(self, scope: MemoryScope, item_id: str) -> MemoryItem | None:
        item = await self._item_writer().promote(scope, item_id)
        await self.sync_index()
        return item

    def _item_writer(self) -> ItemWriter:
        if self.items is None:
            raise RuntimeError("structured items are off")
        return self.items

    async def edit_line(self, scope: MemoryScope, old: str, new: str) -> LineEdit:
        """The model's correction of MEMORY.md (or chat memory): one line replaced or deleted
        under the same lock as every other change (a hand edit is never overwritten); the
        items made of that line follow, then the index. `NotTextError` for a file that is
        not text."""
        edit = await self.long_term.replace_line(scope, old, new)
        if edit.before is None:
            return edit
        if self.items is not None:
            await _attempt(
                "edited_items", self.items.retext(scope, edit.before, edit.after), default=0
            )
        await self.sync_index()
        return edit

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

    # ------------------------------------------------------------------ facts

    async def _facts(
        self, tag: str, scope: MemoryScope, facts: Sequence[str], *, turn: tuple[str, str | None]
    ) -> Stored:
        try:
            added = await self.long_term.append_facts(scope, facts, section=TAGGED_SECTION)
        except Exception:  # a best-effort boundary: logged, the reply still goes out
            log.warning("memory_tag_store_failed", tag=tag, exc_info=True)
            return Stored(False, ())
        session_key, turn_id = turn
        told = (turn_reference(session_key, turn_id),) if turn_id else ()
        return Stored(True, tuple(await self._fact_items(scope, added, extra=told)))

    async def _fact_items(
        self, scope: MemoryScope, facts: Sequence[str], *, extra: Sequence[str]
    ) -> list[MemoryItem]:
        """The facts as semantic items, each citing its MEMORY.md line (and the turn)."""
        if self.items is None or not facts:
            return []
        lines = self._lines_of(scope, facts)
        written: list[MemoryItem] = []
        for fact in facts:
            sources = [*([lines[fact]] if fact in lines else []), *extra]
            write = self.items.add_facts(scope, [fact], sources=sources)
            written += await _attempt("fact_items", write, default=[])
        return written

    def _lines_of(self, scope: MemoryScope, facts: Sequence[str]) -> dict[str, str]:
        """`MEMORY.md#L12` (from `memory/`) for each fact's line as it stands now."""
        path = self.workspace.long_term_path(scope)
        name = path.relative_to(self.workspace.memory_root).as_posix()
        text = self.long_term.snapshot(scope).text
        found: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            fact = line.strip().removeprefix("- ").strip()
            if fact in facts and fact not in found:
                found[fact] = f"{name}#L{number}"
        return found


async def _attempt(what: str, write: Awaitable[T], *, default: T) -> T:
    """A best-effort boundary: a failed write is logged, never raised."""
    try:
        return await write
    except Exception:
        log.warning("memory_write_failed", what=what, exc_info=True)
        return default


async def _done(write: Awaitable[object]) -> bool:
    await write
    return True
