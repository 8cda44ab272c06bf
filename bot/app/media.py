"""Composition of what comes with a message (`bot.media`): one reader per kind and the size
limit. Part of the composition root (see `bot.app`); each channel connects its own files."""

from __future__ import annotations

from bot.media.document import DocumentReader
from bot.media.files import MB
from bot.media.reader import MediaReader
from bot.settings import Settings
from bot.storage.workspace import Workspace


def build_media(settings: Settings, workspace: Workspace) -> MediaReader:
    """The reader of attachments."""
    return MediaReader(
        {"document": DocumentReader()},
        workspace=workspace,
        max_bytes=int(settings.media.max_file_mb * MB),
    )
