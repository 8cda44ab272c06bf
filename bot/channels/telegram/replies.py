"""`TelegramReplier`: answers one chat (and forum topic) in rendered pieces, with fallbacks,
sends a `Document` as a file (sendDocument) and a `Keyed` message with its buttons.

Answering one message (`message_id`), it acknowledges it with a reaction when a turn starts
(`reaction`, e.g. 👀; "" for none; a failure is logged at debug, and never waits long) and takes
the reaction away once the first piece of the answer went out; in a group (`threaded`) the first
piece of each reply is a reply to it (sent even if it was deleted).

A piece whose entities Telegram cannot parse goes again as plain text; one Telegram finds too
long is split in two (plain) and sent as both halves. Failures become `SendFailed`: permanent
when the message can never go out (the bot was blocked, the chat is gone, a request Telegram
refuses as such), otherwise to be tried again (network, 5xx, flood control beyond
`AIORateLimiter`'s own retries).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import timedelta

import structlog
from telegram import Bot, InputFile, MessageEntity, ReplyParameters
from telegram.constants import ChatAction
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    RetryAfter,
    TelegramError,
)

from bot.background import OwnedTask
from bot.channels.telegram.budget import answering, tight
from bot.channels.telegram.buttons import keyboard
from bot.channels.telegram.errors import is_unparsed
from bot.channels.telegram.format import Chunk, render
from bot.errors import SendFailed
from bot.models import Document, Keyed
from bot.storage.inbox import looking_first

log = structlog.get_logger(__name__)
ACKNOWLEDGE_TIMEOUT = 3.0  # seconds a reaction may hold up the turn
UNREACT_WAIT = 30.0  # seconds a reaction's removal waits for the budget, at most
UNREACT_POLL = 0.25  # seconds between its looks
_later: set[asyncio.Task[None]] = set()  # removals waiting (held: a task is otherwise collectable)


@dataclass(frozen=True)
class Threaded:
    """A reply's first piece, sent as a reply to the message it answers."""

    chunk: Chunk
    reply_to: int


class TelegramReplier:
    def __init__(
        self,
        bot: Bot,
        chat_id: int,
        thread_id: int | None,
        *,
        typing_interval: float,
        message_id: int | None = None,  # the message answered (None: a chat, no message)
        threaded: bool = False,  # the first piece replies to `message_id` (groups)
        reaction: str = "",  # set on `message_id` when a turn starts ("": none)
    ) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.thread_id = thread_id
        self.typing_interval = typing_interval
        self.message_id = message_id
        self.threaded = threaded
        self.reaction = reaction
        self._reacted = False  # the reaction is on the message: taken away after a sent piece

    def parts(self, text: str) -> Sequence[object]:  # Chunk, Threaded (and a subclass's)
        chunks = render(text)
        if not (self.threaded and self.message_id is not None and chunks):
            return chunks
        return [Threaded(chunks[0], self.message_id), *chunks[1:]]

    async def acknowledge(self) -> None:
        if not self.reaction or self.message_id is None or tight(self.bot):
            return  # with the budget tight, answers first (`budget`)
        self._reacted = await self._react(self.reaction)

    async def _react(self, reaction: str | None) -> bool:
        """Set (or with None, remove) the bot's reaction on the message; whether it was."""
        assert self.message_id is not None
        try:
            async with asyncio.timeout(ACKNOWLEDGE_TIMEOUT):
                await self.bot.set_message_reaction(
                    self.chat_id, self.message_id, reaction=reaction
                )
        except (TelegramError, TimeoutError) as exc:
            log.debug("reaction_failed", error=type(exc).__name__, detail=str(exc)[:200])
            return False
        return True

    async def send_part(self, part: object) -> None:
        try:
            await self._send(part)
        except RetryAfter as exc:
            raise SendFailed(str(exc), permanent=False, retry_after=_seconds(exc)) from None
        except (Forbidden, ChatMigrated) as exc:
            raise SendFailed(str(exc), permanent=True) from None
        except BadRequest as exc:
            raise SendFailed(exc.message, permanent=True) from None
        except TelegramError as exc:  # network, 5xx, a token rejected mid-run: try again
            raise SendFailed(f"{type(exc).__name__}: {exc}", permanent=False) from None
        if self._reacted:  # the answer is here: the reaction has said what it had to
            self._reacted = False
            self._unreact()

    async def _send(self, part: object) -> None:
        """Send one part; Telegram's own errors go up (`send_part` tells them apart)."""
        assert isinstance(part, Chunk | Threaded | Document | Keyed)
        if isinstance(part, Document):
            await self._send_document(part)
        elif isinstance(part, Keyed):
            await self._send_keyed(part)
        elif isinstance(part, Threaded):
            await self._send_chunk(part.chunk, reply_to=part.reply_to)
        else:
            await self._send_chunk(part)

    def _unreact(self) -> None:
        """Take the reaction away in the background, so the part's record follows its sending
        at once (a stop between the two sends the part again): at once, or with the budget tight,
        once it is not (answers first), after UNREACT_WAIT seconds at most. It goes out once the
        turn may have ended: it looks at nothing first (`looking_first`)."""
        task = asyncio.create_task(self._unreact_later())
        _later.add(task)
        task.add_done_callback(_later.discard)

    async def _unreact_later(self) -> None:
        waited = 0.0
        while tight(self.bot) and waited < UNREACT_WAIT:
            await asyncio.sleep(UNREACT_POLL)
            waited += UNREACT_POLL
        try:
            with looking_first(None):
                await self._react(None)
        except Exception as exc:  # the bot was closed meanwhile (a stop): the reaction stays
            log.debug("reaction_left", error=type(exc).__name__)

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        typing = OwnedTask("telegram-typing")
        typing.start(self._keep_typing())
        try:
            with answering(self.bot):  # the turn runs: its answer is on its way
                yield
        finally:
            await typing.stop()

    async def _send_chunk(self, chunk: Chunk, *, reply_to: int | None = None) -> None:
        entities = [MessageEntity(**entity) for entity in chunk.entities]
        try:
            await self.bot.send_message(
                self.chat_id,
                chunk.text,
                entities=entities,
                message_thread_id=self.thread_id,
                reply_parameters=replying(reply_to),
            )
        except BadRequest as exc:
            if is_unparsed(exc):
                log.warning("entities_rejected_sending_plain", detail=exc.message[:200])
                await self._send_plain(chunk.text, reply_to=reply_to)
            elif "too long" in exc.message.lower():
                log.warning("message_too_long_splitting", chars=len(chunk.text))
                await self._send_plain(chunk.text, reply_to=reply_to)
            else:
                raise

    async def _send_document(self, document: Document) -> None:
        data = InputFile(document.text.encode("utf-8"), filename=document.name)
        await self.bot.send_document(
            self.chat_id,
            data,
            caption=document.caption or None,
            message_thread_id=self.thread_id,
        )

    async def _send_keyed(self, keyed: Keyed) -> None:
        """Plain text with its buttons under it."""
        await self.bot.send_message(
            self.chat_id,
            keyed.text,
            message_thread_id=self.thread_id,
            reply_markup=keyboard(keyed),
        )

    async def _send_plain(self, text: str, *, reply_to: int | None = None) -> None:
        """Plain text, halved (at a line break when there is one) while Telegram says too long;
        the first half replies to `reply_to`."""
        try:
            await self.bot.send_message(
                self.chat_id,
                text,
                message_thread_id=self.thread_id,
                reply_parameters=replying(reply_to),
            )
        except BadRequest as exc:
            if "too long" not in exc.message.lower() or len(text) < 2:
                raise
            cut = text.rfind("\n", 0, len(text) // 2 + 1) + 1 or len(text) // 2
            for half in (text[:cut], text[cut:]):
                if half.strip():
                    await self._send_plain(half, reply_to=reply_to)
                    reply_to = None

    async def _keep_typing(self) -> None:
        while True:
            try:
                if not tight(self.bot):  # with the budget tight, answers first (`budget`)
                    await self.bot.send_chat_action(
                        self.chat_id, ChatAction.TYPING, message_thread_id=self.thread_id
                    )
            except TelegramError as exc:
                log.debug("typing_failed", detail=str(exc)[:200])
            await asyncio.sleep(self.typing_interval)


def replying(message_id: int | None) -> ReplyParameters | None:
    if message_id is None:
        return None
    return ReplyParameters(message_id, allow_sending_without_reply=True)


def _seconds(exc: RetryAfter) -> float:
    after = exc.retry_after
    return after.total_seconds() if isinstance(after, timedelta) else float(after)
