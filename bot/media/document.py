"""Documents: for now one line (their reading and indexing comes here, in this module)."""

from __future__ import annotations

from bot.media.files import MessageFiles
from bot.media.reading import Reading, Unreadable
from bot.models import Attachment, Inbound

NOT_YET = "I can't read documents yet. Paste the text, or send a photo or a voice note."


class DocumentReader:
    async def read(self, inbound: Inbound, attachment: Attachment, files: MessageFiles) -> Reading:
        raise Unreadable(NOT_YET)
