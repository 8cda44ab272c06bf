"""`Fetcher`, the channel's way to a file's bytes, and `MessageFiles`: a message's files fetched
within the size limit (refused in one line before any download) and kept in the workspace, under
the memory folder of the chat's scope (`Workspace.media_path`), written in one step as the
workspace's documents (`Workspace.documents`: on this disk; with replicas in the database every
replica shares, `bot.replicas.shared_documents`).

A file is named after the message (`2026-11-25-143012-voice-17.ogg`), so a message answered
again after a restart finds its file kept and fetches nothing.
"""

from __future__ import annotations

import asyncio
import mimetypes
import re
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Protocol

import structlog

from bot.media.reading import Unreadable
from bot.models import Attachment, Inbound, MemoryScope
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)

MB = 1024 * 1024
TOO_LARGE = "That file is too large for me ({size}; I take up to {limit}), so I didn't download it."
NOT_FETCHED = "I couldn't download that file ({reason}). Please send it again."
NO_CHANNEL = "I can't fetch files from this channel."


class TooLarge(Exception):
    """Refused before downloading: the file is over the limit."""

    def __init__(self, size: int | None, limit: int) -> None:
        super().__init__(f"{size} bytes over {limit}")
        self.size = size
        self.limit = limit


class FetchFailed(Exception):
    """The file could not be fetched; the message says why, without secrets or URLs."""


class Fetcher(Protocol):
    async def fetch(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        """The file's bytes; `TooLarge` before downloading one over `max_bytes` (or the
        channel's own limit), `FetchFailed` when it cannot be had."""
        ...


class LocalFiles:
    """The console's files: `Attachment.file_id` is a path on this machine."""

    async def fetch(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        return await asyncio.to_thread(self._read, Path(attachment.file_id), max_bytes)

    def _read(self, path: Path, max_bytes: int) -> bytes:
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise TooLarge(size, max_bytes)
            return path.read_bytes()
        except OSError as exc:
            raise FetchFailed(exc.strerror or type(exc).__name__) from None


@dataclass(frozen=True)
class Kept:
    """A file kept in the workspace: where, and its bytes."""

    path: Path
    data: bytes
    mime_type: str

    @property
    def name(self) -> str:
        """As the user reads it: `files/<name>`."""
        return f"files/{self.path.name}"


@dataclass(eq=False)
class MessageFiles:
    """The files of one message: fetched once, kept in the workspace."""

    inbound: Inbound
    scope: MemoryScope
    _: KW_ONLY
    fetcher: Fetcher | None
    workspace: Workspace
    max_bytes: int

    async def keep(self, attachment: Attachment) -> Kept:
        """The file, fetched (unless kept already) and kept; `Unreadable` with one line when it
        is too large or cannot be fetched."""
        path = self.workspace.media_path(self.scope, file_name(self.inbound, attachment))
        mime = attachment.mime_type or mimetypes.guess_type(path.name)[0] or ""
        documents = self.workspace.documents
        if (known := await asyncio.to_thread(documents.read, path)) is not None:
            return Kept(path, known, mime)
        data = await self._fetch(attachment)
        await asyncio.to_thread(documents.write, path, data)
        log.info("media_kept", kind=attachment.kind, path=str(path), size=len(data))
        return Kept(path, data, mime)

    async def _fetch(self, attachment: Attachment) -> bytes:
        if self.fetcher is None:
            raise Unreadable(NO_CHANNEL)
        try:
            return await self.fetcher.fetch(attachment, max_bytes=self.max_bytes)
        except TooLarge as exc:
            log.info("media_too_large", kind=attachment.kind, size=exc.size, limit=exc.limit)
            size = "size unknown" if exc.size is None else megabytes(exc.size)
            raise Unreadable(TOO_LARGE.format(size=size, limit=megabytes(exc.limit))) from None
        except FetchFailed as exc:
            log.warning("media_fetch_failed", kind=attachment.kind, reason=str(exc))
            raise Unreadable(NOT_FETCHED.format(reason=exc)) from None


def file_name(inbound: Inbound, attachment: Attachment) -> str:
    """`<day>-<time>-<kind>-<message>[-<name>]<ext>`: the same for the same message."""
    stamp = f"{inbound.received_at:%Y-%m-%d-%H%M%S}"
    message = inbound.message_id if inbound.message_id is not None else inbound.id[-8:]
    original = Path(attachment.file_name or "")
    ext = original.suffix or mimetypes.guess_extension(attachment.mime_type or "") or ""
    if not original.suffix and attachment.kind == "voice" and ext in ("", ".oga"):
        ext = ".ogg"
    stem = re.sub(r"[^\w.-]+", "_", original.stem)[:60].strip("._")
    name = "-".join(part for part in (stamp, attachment.kind, _safe(str(message)), stem) if part)
    return name + _safe(ext)


def _safe(text: str) -> str:
    return re.sub(r"[^\w.-]+", "_", text)


def megabytes(size: int) -> str:
    return f"{size / MB:.1f} MB".replace(".0 MB", " MB")
