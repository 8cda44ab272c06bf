"""The durable inbox: the journal every accepted message is written to at receipt, which is also
the queue the chats are answered from, and the outbound ledger of each reply.

An entry is one small JSON file in `state/inbox/`, keyed by the message's id (a Telegram
update id), written atomically before the channel confirms the message to its source and before
it waits for anything. Its life:

    accepted ──answered (the reply text recorded)──▶ parts sent: 1, 2 … ──▶ done (file removed)

A restart answers what is still there, in arrival order per chat: an entry with a recorded reply
is only sent (from the first part not recorded as sent), never made again. Accepting an id that
is already journaled does nothing, so a message delivered twice is answered once.

An entry may be scheduled rather than sent by anyone (`Inbound.kind`, `bot.reminders`): a
reminder is journaled with its reply already (`accept_answered`, one write), so it is only sent.

The journal has a thread of its own: its writes never queue behind other blocking work (an index
sync, a file read). A part the channel confirmed is recorded by one line appended to the entry's
`.sent` file at once, on the caller's thread (a few microseconds: the kernel keeps it whatever
becomes of the process), then fsynced in the journal's thread. A kill between the channel taking
a part and that append can still make the part go out twice (a channel like Telegram cannot be
asked what it received); the append keeps that window as short as it can be.

A shared journal's entry is fenced to the worker that took it (`Entry.fence`, `Fenced`). Such a
turn's effects outside the process look first that the entry is still theirs (`looking_first`
sets the look for the task and the tasks it starts; `look_first` awaits it): each Telegram request
right before it goes out, each model call before it is made. A look may come with a check at the
wire (`looking_first(look, wire=…)`): the HTTP clients of both (`wire_hook`) run it as the
request's first bytes are about to be written, so a process frozen between its look and that
write sends nothing once it wakes past its hold (`LeaseLapsed`, `bot.replicas.lease`).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast, get_args

import structlog

from bot import versioned
from bot.models import Attachment, AttachmentKind, ChatType, Inbound, InboundKind
from bot.storage.files import FILE_MODE, atomic_write_text, fsync_path
from bot.storage.workspace import encode_key
from bot.versioned import Fields, number, objects

FORMAT_VERSION = 2  # 1: no reply, no sent count; "attachments" may be missing (none);
# "user_display_name" may be missing too (an entry of an older version 2: none)
log = structlog.get_logger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    inbound: Inbound
    seq: int  # arrival order
    reply: str | None = None  # recorded once made; None: not answered yet
    sent: int = 0  # parts of the reply the channel confirmed sent
    absorbed: tuple[str, ...] = ()  # ids of earlier entries answered together with this one
    fence: int = 0  # whose turn it is (a shared journal's); a write under an older one is refused


class Fenced(Exception):
    """A journal write refused: another worker took the entry since this one did (its turn was
    given up as stalled). The stale worker stops; nothing it would send goes out."""


class LeaseLapsed(Fenced):
    """A request stopped at the wire: the turn's hold on its entry may have run out meanwhile
    (the process did not run for that long: frozen, or starved). Whether the entry is still the
    turn's is for the next look to say; nothing of the request went out."""


Look = Callable[[], Awaitable[None]]  # raises `Fenced` when the entry is another worker's now
Wire = Callable[[], None]  # raises `LeaseLapsed` when the hold may have run out
_LOOK: ContextVar[Look | None] = ContextVar("look", default=None)
_WIRE: ContextVar[Wire | None] = ContextVar("wire", default=None)


@contextmanager
def looking_first(look: Look | None, *, wire: Wire | None = None) -> Iterator[None]:
    """Within the block, this task's effects outside the process (and those of the tasks it
    starts) await `look` first, and run `wire` as their bytes are about to go out; None: they
    look at nothing (what goes out once the turn ended)."""
    token, wired = _LOOK.set(look), _WIRE.set(wire)
    try:
        yield
    finally:
        _LOOK.reset(token)
        _WIRE.reset(wired)


async def wire_hook(request: Any) -> None:
    """An httpx request hook (httpx's or httpx2's `event_hooks={"request": [wire_hook]}`):
    a request made under a wire check runs it right before its headers are written (httpcore's
    `trace` extension), after the connection pool and any connect, as late as a client can."""
    if _WIRE.get() is not None:
        request.extensions = {**request.extensions, "trace": _at_the_wire}


async def _at_the_wire(event: str, info: object) -> None:
    if event.endswith("send_request_headers.started") and (wire := _WIRE.get()) is not None:
        wire()


async def look_first() -> None:
    """The current task's look, if it has one (`looking_first`)."""
    if (look := _LOOK.get()) is not None:
        await look()


class Journal(Protocol):
    """What the turn runner, the delivery and the intake need of the journal: `Inbox` (files,
    one process) or a shared one (`bot.replicas.journal`)."""

    def close(self) -> None: ...

    async def accept(self, inbound: Inbound) -> Entry | None: ...

    async def accept_all(self, inbounds: Sequence[Inbound]) -> list[Entry]: ...

    async def accept_answered(self, inbound: Inbound, reply: str) -> Entry | None: ...

    async def answered(self, entry: Entry, reply: str) -> Entry: ...

    async def part_sent(self, entry: Entry, sent: int) -> Entry: ...

    async def merged(self, entries: Sequence[Entry], inbound: Inbound) -> Entry: ...

    async def done(self, inbound_id: str, *, fence: int = 0) -> None: ...

    async def pending(self) -> list[Entry]: ...


class Inbox:
    """The journal as files in one folder (the embedded mode's)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._last_seq = 0
        self._seq_lock = threading.Lock()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")

    def close(self) -> None:
        """Wait for the writes under way; the journal takes no more."""
        self._thread.shutdown(wait=True)

    async def _run(self, work: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, work, *args)

    async def accept(self, inbound: Inbound) -> Entry | None:
        """Journal one message; None when it already was."""
        accepted = await self.accept_all([inbound])
        return accepted[0] if accepted else None

    async def accept_all(self, inbounds: Sequence[Inbound]) -> list[Entry]:
        """Journal messages in the order given (one thread hop); the ones not journaled before."""
        return await self._run(self._accept_all, inbounds)

    async def accept_answered(self, inbound: Inbound, reply: str) -> Entry | None:
        """Journal an entry whose reply is known already (a reminder), in one write: only sent
        from here on; None when it was journaled before."""
        return await self._run(self._accept_answered, inbound, reply)

    async def answered(self, entry: Entry, reply: str) -> Entry:
        """Record the reply before any of it is sent."""
        answered = replace(entry, reply=reply, sent=0)
        await self._run(self._write, answered)
        return answered

    async def part_sent(self, entry: Entry, sent: int) -> Entry:
        """Record that the first `sent` parts of the reply went out: appended at once (see the
        module docstring), fsynced after."""
        path = self._sent_path(entry.inbound.id)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            os.write(fd, f"{sent}\n".encode())
        finally:
            os.close(fd)
        await self._run(fsync_path, path)
        return replace(entry, sent=sent)

    async def merged(self, entries: Sequence[Entry], inbound: Inbound) -> Entry:
        """Answer `entries` (one chat's, not answered yet) together as `inbound`: the last one
        holds it and names the others, which are removed after (a stop between: `pending`
        removes them)."""
        *earlier, last = entries
        absorbed = tuple(e.inbound.id for e in earlier) + last.absorbed
        entry = Entry(inbound, last.seq, None, 0, absorbed)
        await self._run(self._write, entry)
        for inbound_id in absorbed:
            await self.done(inbound_id)
        return entry

    async def done(self, inbound_id: str, *, fence: int = 0) -> None:
        """Close the entry (`fence`: a shared journal's; one process needs none)."""
        await self._run(self._remove, inbound_id)

    async def pending(self) -> list[Entry]:
        """Every entry still here, in arrival order."""
        return await self._run(self._pending)

    # ------------------------------------------------------------------ blocking

    def _accept_all(self, inbounds: Sequence[Inbound]) -> list[Entry]:
        accepted: list[Entry] = []
        for inbound in inbounds:
            if self._path(inbound.id).exists():
                log.info("inbox_duplicate", inbound=inbound.id)
                continue
            entry = Entry(inbound, self._next_seq())
            self._write(entry)
            accepted.append(entry)
        return accepted

    def _accept_answered(self, inbound: Inbound, reply: str) -> Entry | None:
        if self._path(inbound.id).exists():
            return None
        entry = Entry(inbound, self._next_seq(), reply)
        self._write(entry)
        return entry

    def _next_seq(self) -> int:
        with self._seq_lock:
            self._last_seq = max(time.time_ns(), self._last_seq + 1)
            return self._last_seq

    def _write(self, entry: Entry) -> None:
        document = {
            "version": FORMAT_VERSION,
            "seq": entry.seq,
            **encode_inbound(entry.inbound),
            "reply": entry.reply,
            "sent": entry.sent,
            "absorbed": list(entry.absorbed),
        }
        atomic_write_text(self._path(entry.inbound.id), json.dumps(document, ensure_ascii=False))

    def _remove(self, inbound_id: str) -> None:
        self._path(inbound_id).unlink(missing_ok=True)
        self._sent_path(inbound_id).unlink(missing_ok=True)

    def _sent_path(self, inbound_id: str) -> Path:
        return self.folder / f"{encode_key(inbound_id)}.sent"

    def _path(self, inbound_id: str) -> Path:
        return self.folder / f"{encode_key(inbound_id)}.json"

    def _pending(self) -> list[Entry]:
        entries: list[Entry] = []
        for path in self.folder.glob("*.json"):
            try:
                entry = _entry(versioned.mapping(json.loads(path.read_text(encoding="utf-8"))))
                entries.append(
                    replace(entry, sent=max(entry.sent, _sent(path.with_suffix(".sent"))))
                )
            except (ValueError, KeyError, TypeError) as exc:
                aside = path.with_name(path.name + ".unreadable")
                path.replace(aside)
                log.warning("inbox_entry_unreadable", path=str(aside), reason=str(exc))
        for orphan in self.folder.glob("*.sent"):  # its entry was done: a stop came between
            if not orphan.with_suffix(".json").exists():
                orphan.unlink(missing_ok=True)
        absorbed = {inbound_id for entry in entries for inbound_id in entry.absorbed}
        for inbound_id in absorbed:  # a stop came between `merged`'s write and its removals
            self._remove(inbound_id)
        entries = [entry for entry in entries if entry.inbound.id not in absorbed]
        entries.sort(key=lambda entry: entry.seq)
        if entries:
            with self._seq_lock:
                self._last_seq = max(self._last_seq, entries[-1].seq)
        return entries


def _sent(path: Path) -> int:
    """The parts an entry's `.sent` file records as sent (0 without one)."""
    try:
        lines = path.read_text(encoding="ascii", errors="replace").split()
    except FileNotFoundError:
        return 0
    return max((int(line) for line in lines if line.isdigit()), default=0)


def _entry(document: Fields) -> Entry:
    reply = document.get("reply")
    if reply is not None and not isinstance(reply, str):
        raise TypeError("reply is not text")
    absorbed = tuple(str(inbound_id) for inbound_id in _listed(document.get("absorbed")))
    sent = number(document.get("sent", 0))
    return Entry(decode_inbound(document), number(document["seq"]), reply, sent, absorbed)


def encode_inbound(inbound: Inbound) -> Fields:
    return {
        "id": inbound.id,
        "channel": inbound.channel,
        "chat_id": inbound.chat_id,
        "user_id": inbound.user_id,
        "text": inbound.text,
        "received_at": inbound.received_at.isoformat(),
        "chat_type": inbound.chat_type,
        "thread_id": inbound.thread_id,
        "message_id": inbound.message_id,
        "reply_to_message_id": inbound.reply_to_message_id,
        "user_name": inbound.user_name,
        "user_display_name": inbound.user_display_name,
        "addressed": inbound.addressed,
        "attachments": [asdict(attachment) for attachment in inbound.attachments],
        "forwarded": inbound.forwarded,
        "kind": inbound.kind,
    } | ({"joins": inbound.joins} if inbound.joins > 1 else {})


def decode_inbound(document: Fields) -> Inbound:
    chat_type = document.get("chat_type", "private")
    if chat_type not in get_args(ChatType):
        raise ValueError(f"unknown chat type {chat_type!r}")
    kind = document.get("kind", "message")
    if kind not in get_args(InboundKind):
        raise ValueError(f"unknown entry kind {kind!r}")
    attachments = objects(_listed(document.get("attachments")), "attachments")
    return Inbound(
        id=str(document["id"]),
        channel=str(document["channel"]),
        chat_id=number(document["chat_id"]),
        user_id=number(document["user_id"]),
        text=str(document["text"]),
        received_at=datetime.fromisoformat(str(document["received_at"])),
        chat_type=cast(ChatType, chat_type),
        thread_id=_maybe_number(document.get("thread_id")),
        message_id=_maybe_number(document.get("message_id")),
        reply_to_message_id=_maybe_number(document.get("reply_to_message_id")),
        user_name=_maybe_text(document.get("user_name")),
        user_display_name=_maybe_text(document.get("user_display_name")),
        addressed=bool(document.get("addressed", True)),
        attachments=tuple(_attachment(raw) for raw in attachments),
        forwarded=bool(document.get("forwarded", False)),
        kind=cast(InboundKind, kind),
        joins=max(1, _maybe_number(document.get("joins")) or 1),
    )


def _attachment(raw: Fields) -> Attachment:
    kind = raw["kind"]
    if kind not in get_args(AttachmentKind):
        raise ValueError(f"unknown attachment kind {kind!r}")
    return Attachment(
        kind=cast(AttachmentKind, kind),
        file_id=str(raw["file_id"]),
        file_name=_maybe_text(raw.get("file_name")),
        mime_type=_maybe_text(raw.get("mime_type")),
        size=_maybe_number(raw.get("size")),
        duration=_maybe_number(raw.get("duration")),
        what=str(raw.get("what") or ""),
    )


def _listed(value: object) -> list[object]:
    """A list, or none (null, missing)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"not a list: {value!r}")
    return value


def _maybe_number(value: object) -> int | None:
    return None if value is None else number(value)


def _maybe_text(value: object) -> str | None:
    return None if value is None else str(value)
