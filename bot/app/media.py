"""Composition of what comes with a message (`bot.media`): one reader per kind, the size limit,
the transcriber of voice notes, the window a document's text must fit. Part of the composition
root (see `bot.app`); each channel connects its own files."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.llm.transcription import OpenAITranscriber
from bot.llm.windows import ModelWindows
from bot.media.document import DocumentReader
from bot.media.files import MB
from bot.media.photo import PhotoReader
from bot.media.reader import MediaReader
from bot.media.voice import VoiceReader
from bot.models import Usage
from bot.settings import Settings
from bot.storage.workspace import Workspace


def build_media(
    settings: Settings,
    workspace: Workspace,
    transcriber: OpenAITranscriber | None,
    windows: ModelWindows,
    count: Callable[[str], int],
) -> MediaReader:
    """The reader of attachments; `count` counts tokens as the prompt meter does."""
    voice = VoiceReader(transcriber)
    model = settings.llm.model
    vision = settings.media.vision
    photo = PhotoReader(
        sees_images=windows.sees_images(model) if vision is None else vision, model=model
    )
    document = DocumentReader(
        photos=photo,
        max_chars=settings.media.document_chars,
        window=lambda: windows.for_model(model),
        count=count,
    )
    return MediaReader(
        {"voice": voice, "audio": voice, "photo": photo, "document": document},
        workspace=workspace,
        max_bytes=int(settings.media.max_file_mb * MB),
    )


def build_transcriber(
    settings: Settings,
    api_key: str,
    spent: Callable[[str, Usage], Awaitable[None]] | None = None,
) -> OpenAITranscriber | None:
    """Speech to text at its own endpoint, or the chat model's (and its key); None when off."""
    media = settings.media
    if not media.transcription_model.strip():
        return None
    key = media.transcription_api_key
    return OpenAITranscriber(
        base_url=media.transcription_base_url or settings.llm.base_url,
        api_key=key.get_secret_value() if key is not None else api_key,
        model=media.transcription_model,
        timeout=media.transcription_timeout,
        spent=spent,
        proxy=settings.llm.proxy,
    )
