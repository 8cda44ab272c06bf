"""/memory, /remember, /forget and /undo: they act only on the memory this chat may see."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Protocol

from bot.errors import NotTextError
from bot.memory.forgetting import FORGET_MIN_CHARS, Forgotten, Undone, forget_receipt, undo_receipt
from bot.memory.recall.inventory import MemoryInventory
from bot.memory.trust import said_by
from bot.models import Inbound, MemoryScope, Provenance, StoredLine
from bot.systems.tags import Receipts
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks
from bot.turn.commands.handler import Progress

REMEMBER_USAGE = "Usage: /remember <text> — I save it to this chat's memory."
FORGET_USAGE = (
    "Usage: /forget <text> (3 characters or more) — I remove it from everything I keep: "
    "memory, notes, history, items and our conversations."
)


class CommandMemory(Protocol):
    """What the commands write to memory (`MemoryWriter`)."""

    async def remember(
        self, scope: MemoryScope, fact: str, origin: Provenance | None = None
    ) -> StoredLine | None: ...

    async def forget(self, scope: MemoryScope, session_key: str, needle: str) -> Forgotten: ...

    async def undo(self, session_key: str) -> tuple[Undone | None, bool]: ...


@dataclass(eq=False)
class ShowMemory:
    names = ("memory",)
    slow = False

    inventory: MemoryInventory
    access: AccessPolicy

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        return await self.inventory.describe(self.access.scope_for(inbound), inbound.session_key)


@dataclass(eq=False)
class Remember:
    names = ("remember",)
    slow = False

    memory: CommandMemory
    access: AccessPolicy
    receipts: Receipts | None = None  # None: the answer is text only

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        if not args:
            return REMEMBER_USAGE
        scope = self.access.scope_for(inbound)
        try:
            saved = await self.memory.remember(scope, args, said_by(inbound))
        except NotTextError as exc:
            return str(exc)  # what to fix, e.g. "MEMORY.md is not UTF-8 text, …"
        receipts = self.receipts
        if saved and receipts is not None and await receipts.issue(inbound, [saved]):
            return ""  # the receipt, shown after, says it (with its buttons)
        return f"Saved to memory: {saved.text}" if saved else "I already had that."


@dataclass(eq=False)
class Forget:
    names = ("forget",)
    slow = True  # a sweep of every file

    memory: CommandMemory
    access: AccessPolicy
    locks: ChatLocks
    _: KW_ONLY
    undo_minutes: int

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        if len(args) < FORGET_MIN_CHARS:
            return FORGET_USAGE
        scope, key = self.access.scope_for(inbound), inbound.session_key
        async with self.locks.hold(key):  # no note is appended meanwhile
            forgotten = await self.memory.forget(scope, key, args)
        return forget_receipt(args, forgotten, undo_minutes=self.undo_minutes)


@dataclass(eq=False)
class Undo:
    names = ("undo",)
    slow = False

    memory: CommandMemory
    locks: ChatLocks
    _: KW_ONLY
    undo_minutes: int

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        async with self.locks.hold(inbound.session_key):
            undone, expired = await self.memory.undo(inbound.session_key)
        return undo_receipt(undone, expired=expired, undo_minutes=self.undo_minutes)
