"""`ReceiptStore`: receipts and waiting edits in `state/receipts.json`.

One versioned JSON document: `receipts` (id → who said what, where, and what became of it) and
`editing` (chat and user → the receipt whose new text their next message is). At most `limit`
receipts are kept, the oldest dropped first: a receipt past that answers as expired. The file
is a document of the workspace (`documents`: on this disk, or shared by the replicas, so a
button pressed on one replica finds the receipt another one wrote). Every change is a
read-modify-write under the path's lock (`Locks`), written in one step.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import KW_ONLY, asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

from bot import versioned
from bot.models import MemoryScope, StoredLine
from bot.storage.files import ON_DISK, Documents, Locks

VERSION = 1
LIMIT = 500
State = Literal["kept", "undone", "forgotten", "edited", "promoted"]


@dataclass(frozen=True)
class Receipt:
    id: str  # 8 hex digits: what a button's data names
    chat: str  # the session key of the chat it was said in
    user: int  # who said it
    scope: str  # the memory it went to: a chat key, "" for the owner's global memory
    text: str  # the fact as it stands in MEMORY.md; "" once undone, edited or forgotten
    inbound: str  # the message whose reply it follows
    at: str  # ISO time it was stored
    shown: bool = False
    state: State = "kept"
    quote: str = ""  # quoted material's id (`QUOTED.md`): an owner may keep it as a fact
    source: str = ""  # where a quote came from, in brief (`bot.memory.provenance.brief`)
    superseded: tuple[str, ...] = ()  # the lines its write marked superseded, as they were
    replaced: str | None = None  # the line its write took the place of, as it was

    @property
    def memory_scope(self) -> MemoryScope:
        return MemoryScope(chat_key=self.scope or None)

    @property
    def line(self) -> StoredLine:
        """What its write changed, for Undo to put back."""
        return StoredLine(self.memory_scope, self.text, self.superseded, self.replaced)

    def closed(self, state: State) -> Receipt:
        """The receipt once acted on: its state, and no text of the fact left in it."""
        return replace(self, state=state, text="", superseded=(), replaced=None)

    def holds(self, needle: str) -> bool:
        """Whether any text it keeps holds `needle` (casefolded)."""
        texts = (self.text, *self.superseded, self.replaced or "")
        return any(needle in text.casefold() for text in texts)


@dataclass(eq=False)
class ReceiptStore:
    path: Path
    locks: Locks
    _: KW_ONLY
    now: Callable[[], datetime]
    limit: int = LIMIT
    documents: Documents = ON_DISK

    async def add(
        self,
        chat: str,
        user: int,
        scope: MemoryScope,
        text: str,
        inbound: str,
        quote: tuple[str, str] = ("", ""),  # a quote's id and source
        changed: StoredLine | None = None,  # what the write changed besides adding `text`
    ) -> str:
        receipt = Receipt(
            id=secrets.token_hex(4),
            chat=chat,
            user=user,
            scope=scope.chat_key or "",
            text=text,
            inbound=inbound,
            at=self.now().isoformat(timespec="seconds"),
            quote=quote[0],
            source=quote[1],
            superseded=changed.superseded if changed else (),
            replaced=changed.replaced if changed else None,
        )

        def change(book: Book) -> None:
            receipts = book.receipts
            receipts[receipt.id] = receipt
            for old in sorted(receipts, key=lambda k: receipts[k].at)[: -self.limit]:
                del receipts[old]

        await self._change(change)
        return receipt.id

    async def get(self, receipt_id: str) -> Receipt | None:
        book = await asyncio.to_thread(self._read)
        return book.receipts.get(receipt_id)

    async def recent(self) -> list[Receipt]:
        """Every receipt kept, the newest first (the memory page's "What I learned")."""
        book = await asyncio.to_thread(self._read)
        return sorted(book.receipts.values(), key=lambda r: r.at, reverse=True)

    async def unshown(self, inbound: str) -> list[Receipt]:
        book = await asyncio.to_thread(self._read)
        return [r for r in book.receipts.values() if r.inbound == inbound and not r.shown]

    async def update(self, receipt: Receipt) -> None:
        def change(book: Book) -> None:
            if receipt.id in book.receipts:
                book.receipts[receipt.id] = receipt

        await self._change(change)

    async def mark_shown(self, receipt: Receipt) -> None:
        await self.update(replace(receipt, shown=True))

    async def forget(self, chat: str, needle: str) -> list[str]:
        """Drop `chat`'s receipts whose text holds `needle` (any case): /forget leaves no copy
        here. The texts dropped."""
        dropped: list[str] = []
        wanted = needle.casefold()

        def change(book: Book) -> None:
            receipts = book.receipts
            for key, found in list(receipts.items()):
                if found.chat == chat and found.holds(wanted):
                    dropped.append(found.text)
                    del receipts[key]
            editing = book.editing
            for who in [w for w, key in editing.items() if key not in receipts]:
                del editing[who]

        await self._change(change)
        return dropped

    async def await_edit(self, chat: str, user: int, receipt_id: str | None) -> None:
        """The receipt whose new text `user`'s next message in `chat` is (None: no more)."""

        def change(book: Book) -> None:
            key = _editor(chat, user)
            if receipt_id is None:
                book.editing.pop(key, None)
            else:
                book.editing[key] = receipt_id

        await self._change(change)

    async def editing(self, chat: str, user: int) -> str | None:
        book = await asyncio.to_thread(self._read)
        return book.editing.get(_editor(chat, user))

    # ------------------------------------------------------------------ the file

    async def _change(self, change: Callable[[Book], None]) -> None:
        async with self.locks.hold(self.path):
            book = await asyncio.to_thread(self._read)
            change(book)
            body = {
                "receipts": {key: asdict(r) for key, r in book.receipts.items()},
                "editing": book.editing,
            }
            text = versioned.encode(VERSION, body, indent=1)
            await asyncio.to_thread(self.documents.write, self.path, text.encode("utf-8"))

    def _read(self) -> Book:
        document = versioned.load(
            self.documents.read, self.path, VERSION, event="receipts_unreadable"
        )
        if document is None:
            return Book({}, {})
        receipts = versioned.mapping(document.get("receipts")).items()
        editing = versioned.mapping(document.get("editing")).items()
        return Book(
            receipts={key: r for key, raw in receipts if (r := _receipt(raw)) is not None},
            editing={who: key for who, key in editing if isinstance(key, str)},
        )


@dataclass(frozen=True)
class Book:
    """The document: receipts by id, and each waiting edit's receipt by chat and user."""

    receipts: dict[str, Receipt]
    editing: dict[str, str]


def _editor(chat: str, user: int) -> str:
    return f"{chat}|{user}"


def _receipt(raw: object) -> Receipt | None:
    if not isinstance(raw, dict):
        return None
    try:
        receipt = Receipt(**raw)
    except TypeError:
        return None
    superseded = receipt.superseded
    if not isinstance(superseded, list | tuple) or not all(isinstance(s, str) for s in superseded):
        return None
    return replace(receipt, superseded=tuple(superseded))
