"""`TelegramFiles`: a message's file from the Bot API (getFile, then the download), refused
before downloading when it is over the limit: Telegram serves bots files up to 20 MB."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from telegram import Bot
from telegram.error import TelegramError

from bot.media.files import MB, FetchFailed, TooLarge
from bot.models import Attachment

BOT_API_LIMIT = 20 * MB  # getFile serves files up to this size


@dataclass(eq=False)
class TelegramFiles:
    bot: Bot
    _: KW_ONLY
    timeout: float = 60.0

    async def fetch(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        limit = min(max_bytes, BOT_API_LIMIT)
        _within(attachment.size, limit)
        try:
            file = await self.bot.get_file(attachment.file_id)
            _within(file.file_size, limit)
            data = await file.download_as_bytearray(read_timeout=self.timeout)
        except TelegramError as exc:  # its text may hold the file's URL (and so the token)
            if "too big" in exc.message.lower():
                raise TooLarge(attachment.size, limit) from None
            raise FetchFailed(f"Telegram answered {type(exc).__name__}") from None
        except OSError as exc:
            raise FetchFailed(type(exc).__name__) from None
        _within(len(data), limit)
        return bytes(data)


def _within(size: int | None, limit: int) -> None:
    if size is not None and size > limit:
        raise TooLarge(size, limit)
