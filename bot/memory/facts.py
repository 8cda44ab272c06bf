"""MEMORY.md's facts as the writer (`MemoryWriter`) makes them: each fact's item citing its
line, its provenance beside the file, quotes of other people's words kept apart (`QUOTED.md`),
and the items made of lines following the file when it changes (`items.truth`).

Every write holds MEMORY.md's lock (the quotes and the provenance side file share it); the
items and the index are best-effort (`attempt`): a failure is logged and never undoes the file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import structlog

from bot.errors import StoreAway
from bot.memory.items.keeper import ItemKeeper
from bot.memory.items.turn import turn_reference
from bot.memory.lines import bare, is_marked
from bot.memory.notes import quoted
from bot.memory.notes.long_term import LineEdit, LongTermMemory, MemoryText
from bot.memory.notes.merge import Merged
from bot.memory.notes.quoted import Quote
from bot.memory.notes.tags import ExtractedTags
from bot.memory.trust import TurnOrigin
from bot.models import MemoryItem, MemoryScope, Provenance, StoredLine
from bot.storage.files import Locks
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)
T = TypeVar("T")
TAGGED_SECTION = "Remembered"  # where tags, /remember and kept quotes add MEMORY.md lines


class IndexSync(Protocol):
    """The search index catching up with the files (`IndexService`)."""

    async def sync(self) -> None: ...

    async def scrub(self) -> None: ...

    def request(self, paths: Iterable[Path] = (), *, walk: bool = False) -> None: ...

    async def settle(self) -> None: ...


@dataclass(frozen=True)
class Stored:
    ok: bool  # False if any store failed (it is logged)
    items: tuple[MemoryItem, ...]  # the items written or reinforced
    replaced: tuple[str, ...] = ()  # the MEMORY.md lines the new facts superseded
    quoted: tuple[Quote, ...] = ()  # kept as quoted material, waiting for an owner
    added: tuple[StoredLine, ...] = ()  # the lines added (to which memory, what they replaced)


class TagSink(Protocol):
    """Where a reply's memory tags go (`MemoryWriter.store_tags`): system 40 and the memory
    flush."""

    async def store_tags(
        self,
        tags: ExtractedTags,
        *,
        scope: MemoryScope,
        session_key: str,
        turn: str | None,
        origin: TurnOrigin | None = None,
    ) -> Stored: ...


class FactWriter:
    def __init__(
        self,
        workspace: Workspace,
        locks: Locks,
        *,
        long_term: LongTermMemory,
        items: ItemKeeper | None,
        index: IndexSync | None,
    ) -> None:
        self.workspace = workspace
        self.locks = locks
        self.long_term = long_term
        self.items = items
        self.index = index
        self._followed: dict[Path, str] = {}  # MEMORY.md's digest when its items last followed

    async def tagged(
        self,
        tag: str,
        scope: MemoryScope,
        facts: Sequence[str],
        *,
        turn: tuple[str, str | None],
        origin: Provenance | None,
    ) -> Stored:
        """A tag's facts in MEMORY.md, then their items (best-effort: logged, never raised)."""
        try:
            done = await self.long_term.append_facts(
                scope, facts, section=TAGGED_SECTION, origin=origin
            )
        except Exception:  # a best-effort boundary: logged, the reply still goes out
            log.warning("memory_tag_store_failed", tag=tag, exc_info=True)
            return Stored(False, ())
        session_key, turn_id = turn
        told = (turn_reference(session_key, turn_id),) if turn_id else ()
        items = await self.items_of(scope, done.added, extra=told, origin=origin)
        return Stored(True, tuple(items), tuple(done.replaced), added=done.stored(scope))

    async def items_of(
        self,
        scope: MemoryScope,
        facts: Sequence[str],
        *,
        extra: Sequence[str],
        origin: Provenance | None,
    ) -> list[MemoryItem]:
        """The facts as semantic items, each citing its MEMORY.md line (and the turn); then
        the items of the lines they superseded follow the file."""
        if self.items is None or not facts:
            return []
        lines = self._lines_of(scope, facts)
        written: list[MemoryItem] = []
        for fact in facts:
            sources = [*([lines[fact]] if fact in lines else []), *extra]
            write = self.items.add_facts(scope, [fact], sources=sources, origin=origin)
            written += await attempt("fact_items", write, default=[])
        await self._follow(scope, force=True)
        return written

    async def edit(
        self, scope: MemoryScope, old: str, new: str, *, supersedes: Provenance | None = None
    ) -> LineEdit:
        """The model's correction of MEMORY.md (or chat memory): one line replaced or deleted
        under the same lock as every other change (a hand edit is never overwritten); the
        items made of that line follow, then the index. `supersedes` (the new value's
        provenance): the old line stays as history, marked superseded, the new one after it.
        `NotTextError` for a file that is not text."""
        on = supersedes.at.date() if supersedes is not None else None
        edit = await self.long_term.replace_line(scope, old, new, superseded_on=on)
        if edit.before is None:
            return edit
        if supersedes is not None and edit.after is not None:
            fact = bare(edit.after)
            await self.origins(scope, [fact], supersedes)
            await self.items_of(scope, [fact], extra=(), origin=supersedes)
        elif self.items is not None:
            retext = self.items.retext(scope, edit.before, edit.after)
            await attempt("edited_items", retext, default=0)
        await self._sync()
        return edit

    async def restore(self, stored: StoredLine) -> LineEdit:
        """A receipt's Undo: the write `stored` records taken back, every line it touched as it
        was (`LongTermMemory.restore_line`); the items made of them follow, then the index."""
        edit = await self.long_term.restore_line(stored)
        if edit.before is None:
            return edit
        if self.items is not None:
            retext = self.items.retext(stored.scope, edit.before, edit.after)
            await attempt("undone_items", retext, default=0)
        await self._follow(stored.scope, force=True)
        await self._sync()
        return edit

    async def _sync(self) -> None:
        if self.index is not None:
            await self.index.sync()

    async def origins(self, scope: MemoryScope, facts: Sequence[str], origin: Provenance) -> None:
        path = self.workspace.long_term_path(scope)
        async with self.locks.hold(path):
            await asyncio.to_thread(self.long_term.origins(scope).add, facts, origin)

    # ------------------------------------------------------------------ quoted material

    async def quote(
        self, scope: MemoryScope, facts: Sequence[str], origin: Provenance
    ) -> list[Quote]:
        path = self.workspace.long_term_path(scope)
        try:
            async with self.locks.hold(path):
                documents = self.workspace.documents
                quotes = await asyncio.to_thread(quoted.add, path, facts, origin, documents)
        except OSError:
            log.warning("quote_store_failed", exc_info=True)
            return []
        if quotes and self.index is not None:
            self.index.request([quoted.path_of(path)])
        return quotes

    def pending(self, scope: MemoryScope) -> list[Quote]:
        """The scope's quotes waiting for an owner (blocking)."""
        return quoted.pending(self.workspace.long_term_path(scope), self.workspace.documents)

    async def take(self, scope: MemoryScope, quote_id: str) -> Quote | None:
        """The quote with this id, out of QUOTED.md (None when there is none)."""
        path = self.workspace.long_term_path(scope)
        async with self.locks.hold(path):
            documents = self.workspace.documents
            return await asyncio.to_thread(quoted.take, path, quote_id, documents)

    # ------------------------------------------------------------------ files stay the truth

    async def by_hand(self, scope: MemoryScope, seen: MemoryText, text: str) -> Merged:
        """A person's edit of the whole MEMORY.md (the memory page), merged with what changed
        since they saw it (`LongTermMemory.replace_merged`); the items follow, then the index."""
        merged = await self.long_term.replace_merged(scope, seen, text)
        await self.follow([scope])
        if self.index is not None:
            await self.index.sync()
        return merged

    async def follow(self, scopes: Iterable[MemoryScope]) -> int:
        """Before memory is read: the items made of each scope's MEMORY.md lines follow the
        file when it changed since last followed (a hand edit, consolidation), and the index
        catches up with both, so neither the prompt nor a search shows a line that is gone.
        How many items changed."""
        changed = 0
        for scope in dict.fromkeys(scopes):
            changed += await attempt("follow", self._follow(scope), default=0)
        return changed

    async def _follow(self, scope: MemoryScope, *, force: bool = False) -> int:
        if self.items is None:
            return 0
        path = self.workspace.long_term_path(scope)
        snapshot = await asyncio.to_thread(self.long_term.snapshot, scope)
        if not force and self._followed.get(path) == snapshot.digest:
            return 0
        name = path.relative_to(self.workspace.memory_root).as_posix()
        changed = await self.items.follow(scope, snapshot.text, name)
        self._followed[path] = snapshot.digest
        if not force and self.index is not None:  # a write of ours syncs it itself
            self.index.request([path, self.workspace.semantic_items_path(scope)])
            await self.index.settle()
        if changed:
            log.info("items_followed_file", path=name, changed=changed)
        return changed

    def _lines_of(self, scope: MemoryScope, facts: Sequence[str]) -> dict[str, str]:
        """`MEMORY.md#L12` (from `memory/`) for each fact's line as it stands now."""
        path = self.workspace.long_term_path(scope)
        name = path.relative_to(self.workspace.memory_root).as_posix()
        text = self.long_term.snapshot(scope).text
        found: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            fact = bare(line)
            if fact in facts and fact not in found and not is_marked(line):
                found[fact] = f"{name}#L{number}"
        return found


async def attempt(what: str, write: Awaitable[T], *, default: T) -> T:
    """A best-effort boundary: a failed write is logged, never raised (but for `StoreAway`: the
    turn is made again once the replicas' database is back, so no memory is dropped)."""
    try:
        return await write
    except StoreAway:
        raise
    except Exception:
        log.warning("memory_write_failed", what=what, exc_info=True)
        return default
