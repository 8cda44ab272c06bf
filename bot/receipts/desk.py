"""`ReceiptDesk`: receipts issued when something a person said was stored, shown after the
reply, and the presses (or `/receipt` commands) that undo, edit or forget it.

A press is checked on this side only: the receipt its id names must exist, belong to the chat
it was pressed in, and the presser must be who said it or an owner. Undo deletes the MEMORY.md
line (its items follow: `MemoryWriter.edit_line`); Edit waits for the presser's next message in
that chat and puts it in the line's place; Forget removes the text everywhere
(`MemoryWriter.forget`, which /undo puts back for a while).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import KW_ONLY, dataclass
from typing import Protocol

import structlog

from bot.memory.forgetting import Forgotten, forget_receipt
from bot.memory.notes.long_term import LineEdit
from bot.memory.notes.quoted import Quote
from bot.memory.provenance import brief
from bot.models import Inbound, Keyed, MemoryScope, Press, Pressed, StoredLine
from bot.receipts import words
from bot.receipts.store import Receipt, ReceiptStore
from bot.settings import MemorySettings

log = structlog.get_logger(__name__)


class ReceiptMemory(Protocol):
    """What a press changes (`MemoryWriter`)."""

    async def edit_line(self, scope: MemoryScope, old: str, new: str) -> LineEdit: ...

    async def restore(self, stored: StoredLine) -> LineEdit: ...

    async def forget(self, scope: MemoryScope, session_key: str, needle: str) -> Forgotten: ...

    async def keep_quoted(self, scope: MemoryScope, quote_id: str) -> Quote | None: ...


class Owners(Protocol):
    def is_owner(self, user_id: int) -> bool: ...


class Locks(Protocol):
    """A chat's lock (`ChatLocks`): a forget holds it, as /forget does."""

    def hold(self, key: str) -> AbstractAsyncContextManager[None]: ...


@dataclass(eq=False)
class ReceiptDesk:
    store: ReceiptStore
    memory: ReceiptMemory
    _: KW_ONLY
    owners: Owners
    locks: Locks
    undo_minutes: int
    enabled: bool = True  # False: nothing is issued (presses on old receipts still work)

    @classmethod
    def from_settings(
        cls,
        config: MemorySettings,
        store: ReceiptStore,
        memory: ReceiptMemory,
        *,
        owners: Owners,
        locks: Locks,
    ) -> ReceiptDesk:
        """`memory.receipts` off: none issued, and old receipts still work."""
        return cls(
            store,
            memory,
            owners=owners,
            locks=locks,
            undo_minutes=config.undo_minutes,
            enabled=config.receipts,
        )

    async def issue(self, inbound: Inbound, stored: Sequence[StoredLine]) -> bool:
        """A receipt for each fact stored from `inbound` (shown after its reply), with what its
        write changed; whether any was issued."""
        if not self.enabled or not stored:
            return False
        chat, user = inbound.session_key, inbound.user_id
        for line in stored:
            await self.store.add(chat, user, line.scope, line.text, inbound.id, changed=line)
        return True

    async def issue_quotes(
        self, inbound: Inbound, scope: MemoryScope, quotes: Sequence[Quote]
    ) -> None:
        """A receipt for each quote kept from others' words, its Keep button for owners."""
        if not self.enabled:
            return
        for quote in quotes:
            source = (quote.id, brief(quote.origin))
            chat, user = inbound.session_key, inbound.user_id
            await self.store.add(chat, user, scope, quote.text, inbound.id, quote=source)

    async def show(self, inbound: Inbound, send: Callable[[Keyed], Awaitable[None]]) -> None:
        """Send the receipts `inbound` left that were not shown yet (after a restart too)."""
        for receipt in await self.store.unshown(inbound.id):
            if receipt.quote:
                await send(words.quote_message(receipt.id, receipt.text, receipt.source))
            else:
                await send(words.receipt_message(receipt.id, receipt.text))
            await self.store.mark_shown(receipt)

    async def press(self, press: Press) -> Pressed:
        parsed = words.parse_data(press.data)
        if parsed is None:
            return Pressed(words.EXPIRED)
        return await self._act(*parsed, chat=press.session_key, user=press.user_id)

    async def act(
        self, receipt_id: str, action: str, *, chat: str, user: int, new: str | None = None
    ) -> Pressed:
        """A press from outside the chat (the memory page), checked as one pressed in `chat`:
        `u` undo, `f` forget, `k` keep a quote, `e` with `new`: the line edited at once."""
        return await self._act(receipt_id, action, chat=chat, user=user, new=new)

    async def intercept(self, inbound: Inbound) -> str | None:
        """The answer to a message the desk takes: `/receipt ID ACTION`, or the new text of
        an edit this person started; None for any other message."""
        text = inbound.text.strip()
        first, _, args = text.partition(" ")
        if first.split("@", 1)[0].lower() == f"/{words.COMMAND}":
            parsed = words.parse_command(args)
            if parsed is None:
                return words.USAGE.format(command=words.COMMAND)
            pressed = await self._act(*parsed, chat=inbound.session_key, user=inbound.user_id)
            return pressed.text or pressed.notice
        pending = await self.store.editing(inbound.session_key, inbound.user_id)
        if pending is None:
            return None
        await self.store.await_edit(inbound.session_key, inbound.user_id, None)
        receipt = await self.store.get(pending)
        if text.startswith("/") or receipt is None or receipt.state != "kept":
            return None  # a command cancels the edit and is answered as usual
        chat, user = inbound.session_key, inbound.user_id
        return await self._edit(receipt, text, chat=chat, user=user, inbound=inbound.id)

    # ------------------------------------------------------------------ the actions

    async def _act(
        self, receipt_id: str, action: str, *, chat: str, user: int, new: str | None = None
    ) -> Pressed:
        receipt = await self.store.get(receipt_id)
        if receipt is None:
            return Pressed(words.EXPIRED)
        if receipt.quote and action == "k":
            return await self._keep(receipt, chat=chat, user=user)
        if receipt.quote or action == "k":  # a quote is kept or left; a fact is not a quote
            return Pressed(words.EXPIRED)
        if receipt.chat != chat or (receipt.user != user and not self.owners.is_owner(user)):
            log.info("receipt_refused", receipt=receipt_id, action=action)
            return Pressed(words.NOT_YOURS)
        if receipt.state != "kept":
            return Pressed(words.DONE_ALREADY.format(state=receipt.state))
        log.info("receipt_pressed", receipt=receipt_id, action=action)
        if action == "u":
            return await self._undo(receipt)
        if action == "f":
            return await self._forget(receipt)
        if new is not None:
            told = await self._edit(receipt, new, chat=chat, user=user, inbound=receipt.inbound)
            return Pressed(told, told)
        await self.store.await_edit(chat, user, receipt.id)
        fact = words.short(receipt.text)
        return Pressed(words.ASK_NEW_TEXT_NOTICE, words.ASK_NEW_TEXT.format(fact=fact))

    async def _keep(self, receipt: Receipt, *, chat: str, user: int) -> Pressed:
        """An owner's tap: the quote becomes a fact (`MemoryWriter.keep_quoted`)."""
        if receipt.chat != chat or not self.owners.is_owner(user):
            return Pressed(words.OWNERS_ONLY)
        if receipt.state != "kept":
            return Pressed(words.DONE_ALREADY.format(state=receipt.state))
        scopes = (receipt.memory_scope, MemoryScope(chat_key=receipt.chat))
        for scope in dict.fromkeys(scopes):
            if await self.memory.keep_quoted(scope, receipt.quote) is not None:
                await self.store.update(receipt.closed("promoted"))
                text = words.PROMOTED.format(fact=words.short(receipt.text))
                return Pressed(text, text)
        return _gone(receipt, "keep")

    async def _undo(self, receipt: Receipt) -> Pressed:
        edit = await self.memory.restore(receipt.line)
        if edit.before is None:
            return _gone(receipt, "undo")
        await self.store.update(receipt.closed("undone"))
        text = words.UNDONE.format(fact=words.short(receipt.text))
        return Pressed(text, text)

    async def _forget(self, receipt: Receipt) -> Pressed:
        async with self.locks.hold(receipt.chat):
            forgotten = await self.memory.forget(receipt.memory_scope, receipt.chat, receipt.text)
        if not forgotten.total:
            return _gone(receipt, "forget")
        await self.store.update(receipt.closed("forgotten"))
        told = forget_receipt(receipt.text, forgotten, undo_minutes=self.undo_minutes)
        return Pressed(f"Forgot it ({forgotten.total} in all).", told[: words.TEXT_CHARS])

    async def _edit(self, receipt: Receipt, new: str, *, chat: str, user: int, inbound: str) -> str:
        new = " ".join(new.split())
        if not new:
            return words.EDIT_EMPTY.format(fact=words.short(receipt.text))
        edit = await self.memory.edit_line(receipt.memory_scope, receipt.text, new)
        if edit.before is None:
            return words.GONE.format(fact=words.short(receipt.text), action="edit")
        await self.store.update(receipt.closed("edited"))
        if self.enabled:  # the new text's receipt undoes to the text it replaced
            changed = StoredLine(receipt.memory_scope, new, replaced=edit.before)
            await self.store.add(chat, user, receipt.memory_scope, new, inbound, changed=changed)
        return words.EDITED.format(old=words.short(receipt.text), new=words.short(new))


def _gone(receipt: Receipt, action: str) -> Pressed:
    text = words.GONE.format(fact=words.short(receipt.text), action=action)
    return Pressed(text, text)
