"""`MediaReader`: a message's attachments read, before the pipeline, by the `KindReader` of
their kind (one module each: voice, photo, document, other); the channels connect their
`Fetcher`. A message without attachments reads as its text."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Protocol

from bot.media.document import DocumentReader
from bot.media.files import MB, Fetcher, MessageFiles
from bot.media.other import OtherReader
from bot.media.photo import PhotoReader
from bot.media.reading import FORWARDED, Reading
from bot.media.voice import Transcriber, VoiceReader
from bot.models import Attachment, AttachmentKind, Inbound, MemoryScope
from bot.settings import Settings
from bot.storage.workspace import Workspace


class KindReader(Protocol):
    """Reads one kind of attachment (`MediaReader` dispatches by `Attachment.kind`); each
    kind's module implements it."""

    async def read(
        self, inbound: Inbound, attachment: Attachment, files: MessageFiles
    ) -> Reading: ...


class Windows(Protocol):
    """The models' context windows (`bot.llm.windows.ModelWindows`)."""

    def for_model(self, model: str) -> int: ...

    def sees_images(self, model: str) -> bool: ...


class MediaReader:
    def __init__(
        self,
        readers: Mapping[AttachmentKind, KindReader],
        *,
        workspace: Workspace,
        max_bytes: int,
        fetchers: Mapping[str, Fetcher] | None = None,  # by channel
    ) -> None:
        self.readers = dict(readers)
        self.workspace = workspace
        self.max_bytes = max_bytes
        self.fetchers = dict(fetchers or {})
        self.other: KindReader = OtherReader()

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        workspace: Workspace,
        transcriber: Transcriber | None,
        windows: Windows,
        count: Callable[[str], int],
    ) -> MediaReader:
        """One reader per kind (`media.vision` unset: whether the model sees images is what
        `windows` lists); `count` counts tokens as the prompt meter does."""
        voice = VoiceReader(transcriber)
        model, config = settings.llm.model, settings.media
        vision = windows.sees_images(model) if config.vision is None else config.vision
        photo = PhotoReader(sees_images=vision, model=model)
        document = DocumentReader(
            photos=photo,
            max_chars=config.document_chars,
            window=lambda: windows.for_model(model),
            count=count,
        )
        return cls(
            {"voice": voice, "audio": voice, "photo": photo, "document": document},
            workspace=workspace,
            max_bytes=int(config.max_file_mb * MB),
        )

    def connect(self, channel: str, fetcher: Fetcher) -> None:
        """The channel's way to its files (Telegram connects its bot once started)."""
        self.fetchers[channel] = fetcher

    async def read(self, inbound: Inbound, scope: MemoryScope) -> Reading:
        """The message as the turn reads it (a forwarded one marked `FORWARDED`, so that the
        session, and consolidation reading it later, see whose words they are); `Unreadable`
        (one line, the model not called) when an attachment cannot be read."""
        reading = await self._read(inbound, scope)
        if inbound.forwarded:
            return replace(reading, text=f"{FORWARDED} {reading.text}")
        return reading

    async def _read(self, inbound: Inbound, scope: MemoryScope) -> Reading:
        if not inbound.attachments:
            return Reading(inbound.text)
        files = MessageFiles(
            inbound,
            scope,
            fetcher=self.fetchers.get(inbound.channel),
            workspace=self.workspace,
            max_bytes=self.max_bytes,
        )
        readings = [
            await self.readers.get(attachment.kind, self.other).read(inbound, attachment, files)
            for attachment in inbound.attachments
        ]
        return Reading(
            "\n".join(reading.text for reading in readings),
            tuple(image for reading in readings for image in reading.images),
            "\n\n".join(reading.attached for reading in readings if reading.attached),
            tuple(path for reading in readings for path in reading.written),
        )
