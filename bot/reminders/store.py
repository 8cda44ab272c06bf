"""`ReminderStore`: each chat's scheduled items, in `reminders.jsonl` beside the chat's memory
(the owner's private chat: the global memory folder), one item a line, so /forget (which
removes the lines holding a text) and an export of the memory reach them:

    {"version": 1, "id": "r3f2a1c", "text": "call the bank", "rule": {"at": "…"}, …}

The file is a document of the workspace (`Workspace.documents`: on this disk, or shared by
the replicas): every change holds the path's lock (`Locks`, the replicas' own when shared) and
is written in one step over the version it read (a person's edit made meanwhile is read and the
change made on it); what was read is kept by the document's version, so a change made by
another replica is read again. A person may edit the file: a line that cannot be read is kept
as it is (never dropped by a later write) and skipped; a file that is not text is left alone
and nothing is written over it (`StoreError` says where).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path

import structlog

from bot import versioned
from bot.models import GLOBAL_SCOPE, MemoryScope
from bot.reminders.model import Reminder, decode, encode
from bot.storage.files import Documents, Locks, Signature
from bot.storage.workspace import Workspace, decode_key

log = structlog.get_logger(__name__)
FORMAT_VERSION = 1
CHANGE_TRIES = 3  # reads of a file a person keeps changing before a change gives up

Change = Callable[[list[Reminder]], list[Reminder]]


class StoreError(Exception):
    """A reminders file that cannot be read, so it is not written over."""


def new_id() -> str:
    return "r" + uuid.uuid4().hex[:6]


class ReminderStore:
    def __init__(self, workspace: Workspace, locks: Locks) -> None:
        self.workspace = workspace
        self.documents: Documents = workspace.documents
        self.locks = locks
        self._known: dict[Path, tuple[Signature, list[Reminder]]] = {}  # read, by version

    def path(self, scope: MemoryScope) -> Path:
        return self.workspace.reminders_path(scope)

    async def items(self, scope: MemoryScope) -> list[Reminder]:
        """The scope's items (none when its file is missing or unreadable)."""
        return await asyncio.to_thread(self._items, scope)

    async def everything(self) -> list[tuple[MemoryScope, Reminder]]:
        """Every chat's items, with the scope each is kept in (one thread hop; a file not
        changed since it was last read is not read again: the scheduler asks every second)."""
        return await asyncio.to_thread(self._everything)

    def _everything(self) -> list[tuple[MemoryScope, Reminder]]:
        return [(scope, item) for scope in self._scopes() for item in self._items(scope)]

    def _scopes(self) -> list[MemoryScope]:
        """The owner's scope, and every chat's that has a reminders file."""
        chats = self.workspace.memory_root / "chats"
        name = self.path(GLOBAL_SCOPE).name
        found = self.documents.listing(chats, f"*/{name}")
        return [GLOBAL_SCOPE, *(MemoryScope(chat_key=decode_key(p.parent.name)) for p in found)]

    def _items(self, scope: MemoryScope) -> list[Reminder]:
        path = self.path(scope)
        signature = self.documents.version(path)
        if signature is None:
            return []
        known = self._known.get(path)
        if known is not None and known[0] == signature:
            return list(known[1])
        try:
            items, _ = _read(self.documents, path)
        except StoreError as exc:
            log.warning("reminders_unreadable", reason=str(exc))
            return []
        self._known[path] = (signature, items)
        return items

    async def change(self, scope: MemoryScope, change: Change) -> list[Reminder]:
        """Apply `change` to the scope's items under the lock, written in one step over the
        version read (a person's edit made meanwhile is read, and `change` applied to it
        again); the items as they are now. `StoreError` when the file cannot be read, or keeps
        changing (nothing is written)."""
        path = self.path(scope)
        async with self.locks.hold(path):
            for _ in range(CHANGE_TRIES):
                changed = await asyncio.to_thread(self._change, path, change)
                if changed is not None:
                    return changed
        raise StoreError(f"{path} kept changing while it was written; try again")

    def _change(self, path: Path, change: Change) -> list[Reminder] | None:
        """`change` applied and written; None when the file changed since it was read."""
        read_as = self.documents.version(path)
        items, unreadable = _read(self.documents, path)
        changed = change(list(items))
        if changed == items or _write(self.documents, path, changed, unreadable, read_as):
            return changed
        return None

    async def add(self, scope: MemoryScope, item: Reminder) -> Reminder:
        await self.change(scope, lambda items: [*items, item])
        return item

    async def replace(self, scope: MemoryScope, item: Reminder) -> None:
        """Put `item` in place of the one with its id (nothing when that one is gone)."""
        await self.change(scope, lambda items: [item if i.id == item.id else i for i in items])

    async def remove(self, scope: MemoryScope, item_id: str) -> Reminder | None:
        """Cancel one item; the item, or None when the scope has none by that id."""
        removed: list[Reminder] = []

        def without(items: list[Reminder]) -> list[Reminder]:
            removed[:] = [i for i in items if i.id == item_id]  # of the last read: it may repeat
            return [i for i in items if i.id != item_id]

        await self.change(scope, without)
        return removed[0] if removed else None

    async def find(self, item_id: str) -> tuple[MemoryScope, Reminder] | None:
        for scope, item in await self.everything():
            if item.id == item_id:
                return scope, item
        return None


def _read(documents: Documents, path: Path) -> tuple[list[Reminder], list[str]]:
    """The file's items, and the lines that could not be read (kept on the next write)."""
    data = documents.read(path)
    if data is None:
        return [], []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path} is not text ({exc.reason}); fix or move it") from exc
    items: list[Reminder] = []
    unreadable: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            items.append(decode(versioned.decode(line, FORMAT_VERSION, unversioned=True)))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("reminder_unreadable", path=str(path), reason=str(exc))
            unreadable.append(line)
    return items, unreadable


def _write(
    documents: Documents,
    path: Path,
    items: list[Reminder],
    unreadable: list[str],
    read_as: Signature | None,
) -> bool:
    """The items written over the version `read_as` (False, nothing written, when it changed)."""
    lines = [versioned.encode(FORMAT_VERSION, encode(i)) for i in items]
    text = "".join(f"{line}\n" for line in [*lines, *unreadable])
    return documents.write_if(path, text.encode("utf-8"), read_as)
