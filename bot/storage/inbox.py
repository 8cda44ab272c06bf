"""The durable inbox: every accepted message is journaled before the model is called.

An entry is one small JSON file in `state/inbox/`, written atomically on accept and removed
once the reply has been sent. Entries still there at start-up are turns a crash interrupted;
they are replayed in the order they arrived.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any, get_args

import structlog

from bot.models import ChatType, Inbound
from bot.storage.files import atomic_write_text
from bot.storage.workspace import encode_key

FORMAT_VERSION = 1
log = structlog.get_logger(__name__)


class Inbox:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def accept(self, inbound: Inbound) -> None:
        document = {"version": FORMAT_VERSION, "seq": time.time_ns(), **_encode(inbound)}
        text = json.dumps(document, ensure_ascii=False)
        await asyncio.to_thread(atomic_write_text, self._path(inbound.id), text)

    async def done(self, inbound_id: str) -> None:
        await asyncio.to_thread(self._path(inbound_id).unlink, missing_ok=True)

    async def pending(self) -> list[Inbound]:
        return await asyncio.to_thread(self._pending)

    def _path(self, inbound_id: str) -> Path:
        return self.folder / f"{encode_key(inbound_id)}.json"

    def _pending(self) -> list[Inbound]:
        entries: list[tuple[int, Inbound]] = []
        for path in self.folder.glob("*.json"):
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
                entries.append((int(document["seq"]), _decode(document)))
            except (ValueError, KeyError, TypeError) as exc:
                aside = path.with_name(path.name + ".unreadable")
                path.replace(aside)
                log.warning("inbox_entry_unreadable", path=str(aside), reason=str(exc))
        return [inbound for _, inbound in sorted(entries, key=lambda e: e[0])]


def _encode(inbound: Inbound) -> dict[str, Any]:
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
    }


def _decode(document: dict[str, Any]) -> Inbound:
    chat_type = document.get("chat_type", "private")
    if chat_type not in get_args(ChatType):
        raise ValueError(f"unknown chat type {chat_type!r}")
    return Inbound(
        id=str(document["id"]),
        channel=str(document["channel"]),
        chat_id=int(document["chat_id"]),
        user_id=int(document["user_id"]),
        text=str(document["text"]),
        received_at=datetime.fromisoformat(document["received_at"]),
        chat_type=chat_type,
        thread_id=document.get("thread_id"),
        message_id=document.get("message_id"),
        reply_to_message_id=document.get("reply_to_message_id"),
        user_name=document.get("user_name"),
    )
