"""Voice notes and audio files: kept, transcribed (`Transcriber`), and read by the turn as
`[voice] <the words>` (audio: `[audio: <file name>] <the words>`), which the session and the
daily note keep. Transcription off or failing: one line, the recording kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import structlog

from bot.errors import TranscriptionFailed
from bot.media.files import MessageFiles
from bot.media.reading import Reading, Unreadable
from bot.models import Attachment, Inbound

log = structlog.get_logger(__name__)

OFF = (
    "I can't listen to voice messages: transcription is off (BOT_MEDIA__TRANSCRIPTION_MODEL). "
    "I kept the recording as {name}."
)
FAILED = (
    "I couldn't transcribe that recording: {reason}. I kept it as {name}; please try again "
    "later, or type it."
)
SILENT = "I couldn't make out any words in that recording."


class Transcriber(Protocol):
    async def transcribe(self, audio: bytes, *, file_name: str, mime_type: str) -> str:
        """The words spoken ("" when none); `TranscriptionFailed` when it cannot say."""
        ...


@dataclass(eq=False)
class VoiceReader:
    transcriber: Transcriber | None

    async def read(self, inbound: Inbound, attachment: Attachment, files: MessageFiles) -> Reading:
        kept = await files.keep(attachment)
        if self.transcriber is None:
            raise Unreadable(OFF.format(name=kept.name))
        try:
            words = await self.transcriber.transcribe(
                kept.data, file_name=kept.path.name, mime_type=kept.mime_type
            )
        except TranscriptionFailed as exc:
            raise Unreadable(FAILED.format(reason=exc, name=kept.name)) from None
        if not words:
            raise Unreadable(SILENT)
        log.info("voice_transcribed", chars=len(words), seconds=attachment.duration)
        spoken = f"{label(attachment)} {words}"
        return Reading(f"{spoken}\n{inbound.text}" if inbound.text.strip() else spoken)


def label(attachment: Attachment) -> str:
    """How the session and the notes mark the words of a recording."""
    if attachment.kind == "voice":
        return "[voice]"
    return f"[audio: {attachment.file_name}]" if attachment.file_name else "[audio]"
