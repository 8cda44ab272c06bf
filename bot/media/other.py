"""Anything the bot cannot read (a sticker, a location, a video …): one line that says what it
can read."""

from __future__ import annotations

from bot.media.files import MessageFiles
from bot.media.reading import Reading, Unreadable
from bot.models import Attachment, Inbound

SUPPORTED = (
    "I can't read {what} messages. I read text, voice notes, audio files, photos and documents "
    "(text files and PDFs), with a caption if you like."
)


class OtherReader:
    async def read(self, inbound: Inbound, attachment: Attachment, files: MessageFiles) -> Reading:
        raise Unreadable(SUPPORTED.format(what=attachment.what or attachment.kind))
