"""Replies shown while they are written (`bot.turn.live`), in Telegram: `DraftingReplier` (a
`TelegramReplier` that offers a draft per turn), `TelegramDraft`, `InPlace` and `DraftSupport`.

In a private chat the draft is `sendMessageDraft` (Bot API 9.5+): an animated, ephemeral preview
that the final `sendMessage` replaces. In a group, or once a server refused that call (it is
then not asked again while the bot runs), a message is sent once the answer has been coming for
an interval (a quick answer gets no preview, just its final message), edited as the text grows,
and becomes the answer: when the turn ends in a reply (`hand_over`), the reply's first part is
an `InPlace`, which the ledger sends like any part (recorded once Telegram took it) as the edit
of that message into the formatted text; the rest of a long reply follows in new messages. One
message, never deleted and sent again; it notifies once, when it is first sent. A turn that
ends without a reply (stopped, or broken) deletes it (`close`). A preview Telegram no longer
lets us edit (someone deleted it) is replaced by a new message. A group's message is edited at
most every `GROUP_INTERVAL`.

Each showing is rendered as the reply will be (entities; plain when Telegram cannot parse them):
a draft shows the last piece of an answer past the message limit, a message the first (what
it will hold). Flood control or a network error skips one showing; the next comes after the
interval.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial

import structlog
from telegram import Bot, Message, MessageEntity
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError

from bot.channels.telegram.budget import tight
from bot.channels.telegram.errors import is_unparsed
from bot.channels.telegram.format import Chunk, render
from bot.channels.telegram.replies import TelegramReplier, replying

log = structlog.get_logger(__name__)
GROUP_INTERVAL = 3.0  # seconds: Telegram (and AIORateLimiter) allow a group 20 messages a minute
SENT_WAIT = 10.0  # seconds the turn's end waits for a preview message being sent
_Send = Callable[[str, list[MessageEntity] | None], Awaitable[None]]  # text, entities
Keep = Callable[[int, str], None]  # (the preview message, the reply it becomes)


@dataclass(frozen=True)
class InPlace:
    """A reply's first piece, put in place of the preview message shown while it was written."""

    chunk: Chunk
    message_id: int  # the preview
    reply_to: int | None  # what a new message replies to, should the preview be gone


@dataclass(frozen=True)
class _Kept:
    message_id: int
    reply: str


class DraftSupport:
    """Whether this bot may use sendMessageDraft: yes until Telegram refuses it once."""

    def __init__(self) -> None:
        self.usable = True


class DraftingReplier(TelegramReplier):
    def __init__(
        self,
        bot: Bot,
        chat_id: int,
        thread_id: int | None,
        *,
        support: DraftSupport,
        interval: float,  # seconds between two showings
        typing_interval: float,
        message_id: int | None = None,  # as `TelegramReplier`'s
        threaded: bool = False,
        reaction: str = "",
    ) -> None:
        super().__init__(
            bot,
            chat_id,
            thread_id,
            typing_interval=typing_interval,
            message_id=message_id,
            threaded=threaded,
            reaction=reaction,
        )
        self.support = support
        self.interval = interval
        self._kept: _Kept | None = None  # the preview the turn's reply goes into

    def draft(self) -> TelegramDraft:
        return TelegramDraft(
            self.bot,
            self.chat_id,
            self.thread_id,
            support=self.support,
            interval=self.interval,
            reply_to=self.message_id if self.threaded else None,
            keep=self._keep,
        )

    def _keep(self, message_id: int, reply: str) -> None:
        self._kept = _Kept(message_id, reply)

    def parts(self, text: str) -> Sequence[object]:
        """As `TelegramReplier.parts`; the turn's reply, when a preview was kept for it, has
        an `InPlace` first (any other text, a receipt or a notice, goes as new messages)."""
        kept = self._kept
        chunks = render(text)
        if kept is None or kept.reply != text or not chunks:
            return super().parts(text)
        reply_to = self.message_id if self.threaded else None
        return [InPlace(chunks[0], kept.message_id, reply_to), *chunks[1:]]

    async def _send(self, part: object) -> None:
        if not isinstance(part, InPlace):
            await super()._send(part)
            return
        await self._put_in_place(part)
        self._kept = None

    async def _put_in_place(self, part: InPlace) -> None:
        """The preview edited into the piece (the same text already: nothing to do). One
        Telegram will not edit (gone, or refused) is deleted if it still can be, and the piece
        sent as a new message instead."""
        edit = partial(self._edit_text, part.message_id)
        try:
            await _plain_if_unparsed(edit, part.chunk)
        except BadRequest as exc:
            if "not modified" in exc.message.lower():
                return
            log.warning("preview_not_edited_sending_anew", detail=exc.message[:200])
            await _delete(self.bot, self.chat_id, part.message_id)
            await self._send_chunk(part.chunk, reply_to=part.reply_to)

    async def _edit_text(
        self, message_id: int, text: str, entities: list[MessageEntity] | None
    ) -> None:
        await self.bot.edit_message_text(
            text, chat_id=self.chat_id, message_id=message_id, entities=entities
        )


class TelegramDraft:
    """One turn's draft: sendMessageDraft while it works, else a message edited in place."""

    def __init__(
        self,
        bot: Bot,
        chat_id: int,
        thread_id: int | None,
        *,
        support: DraftSupport,
        interval: float,
        reply_to: int | None = None,  # the message a group's preview replies to
        keep: Keep | None = None,  # where a preview message goes to become the reply
    ) -> None:
        self.bot = bot
        self.reply_to = reply_to
        self.keep = keep
        self.chat_id = chat_id
        self.thread_id = thread_id
        self.support = support
        self.interval = interval if _private(chat_id) else max(interval, GROUP_INTERVAL)
        self.draft_id = secrets.randbelow(2**31 - 2) + 1  # non-zero; one per turn
        self.message_id: int | None = None  # the preview message, once one was sent
        self._sending: asyncio.Future[Message] | None = None  # that message being sent
        self._first_text: float | None = None  # when there was first text to show (monotonic)
        self._in_message: Chunk | None = None  # what the preview message holds

    async def show(self, text: str) -> None:
        pieces = render(text)
        if not pieces or tight(self.bot):
            return  # with the budget tight, answers first (`budget`): the next showing comes
        try:
            if self._drafts() and await self._draft(pieces[-1]):
                return
            if self.message_id is None and self._sending is None and not self._long_enough():
                return
            await self._edit(pieces[0])
        except (RetryAfter, NetworkError) as exc:
            log.info("draft_skipped", reason=f"{type(exc).__name__}: {exc}"[:200])

    async def hand_over(self, reply: str) -> None:
        """The turn ended in `reply`: a preview message is kept to become its first part (the
        replier edits it in place); a sendMessageDraft preview needs nothing (the final
        message replaces it)."""
        if await self._sent() is None:
            return
        if self.keep is None:
            await self.close()
            return
        assert self.message_id is not None
        self.keep(self.message_id, reply)
        self.message_id = None

    async def close(self) -> None:
        """Delete the preview message, once the message being sent as one, if any, is."""
        if await self._sent() is None:
            return
        assert self.message_id is not None
        await _delete(self.bot, self.chat_id, self.message_id)
        self.message_id = None

    async def _sent(self) -> int | None:
        """The preview message, once the one being sent, if any, is (None: there is none)."""
        if self.message_id is None and self._sending is not None:
            try:
                self.message_id = (await asyncio.wait_for(self._sending, SENT_WAIT)).message_id
            except (TelegramError, TimeoutError) as exc:
                log.warning("draft_unsent", detail=f"{type(exc).__name__}: {exc}"[:200])
        return self.message_id

    def _long_enough(self) -> bool:
        """Whether the answer has been coming for an interval: only then is a preview message
        sent (a quick answer gets none, just its final message)."""
        now = time.monotonic()
        if self._first_text is None:
            self._first_text = now
        return now - self._first_text >= self.interval

    def _drafts(self) -> bool:
        return self.support.usable and _private(self.chat_id) and self.message_id is None

    async def _draft(self, chunk: Chunk) -> bool:
        """Show `chunk` with sendMessageDraft; False when Telegram refuses the method."""
        try:
            await _plain_if_unparsed(self._send_draft, chunk)
        except (RetryAfter, NetworkError):
            raise
        except TelegramError as exc:
            log.info("draft_refused_editing_instead", detail=str(exc)[:200])
            self.support.usable = False
            return False
        return True

    async def _send_draft(self, text: str, entities: list[MessageEntity] | None) -> None:
        await self.bot.send_message_draft(
            self.chat_id,
            self.draft_id,
            text,
            message_thread_id=self.thread_id,
            entities=entities,
        )

    async def _edit(self, chunk: Chunk) -> None:
        if chunk == self._in_message:
            return  # past the message limit, the first piece stops changing
        try:
            await _plain_if_unparsed(self._send_or_edit, chunk)
        except BadRequest as exc:
            if "not modified" not in exc.message.lower():
                raise
        self._in_message = chunk

    async def _send_or_edit(self, text: str, entities: list[MessageEntity] | None) -> None:
        if self.message_id is None:
            # shielded: the turn's end cancels a showing, and a preview sent but not known
            # could not be deleted (`close` waits for it instead)
            self._sending = asyncio.ensure_future(
                self.bot.send_message(
                    self.chat_id,
                    text,
                    entities=entities,
                    message_thread_id=self.thread_id,
                    reply_parameters=replying(self.reply_to),
                )  # it notifies: it becomes the answer, and an edit never notifies
            )
            message = await asyncio.shield(self._sending)
            self.message_id = message.message_id
        else:
            await self.bot.edit_message_text(
                text, chat_id=self.chat_id, message_id=self.message_id, entities=entities
            )


async def _plain_if_unparsed(send: _Send, chunk: Chunk) -> None:
    entities = [MessageEntity(**entity) for entity in chunk.entities]
    try:
        await send(chunk.text, entities or None)
    except BadRequest as exc:
        if not entities or not is_unparsed(exc):
            raise
        await send(chunk.text, None)


async def _delete(bot: Bot, chat_id: int, message_id: int) -> None:
    """Delete a preview message; one that cannot be is logged and left."""
    try:
        await bot.delete_message(chat_id, message_id)
    except TelegramError as exc:
        log.warning("draft_delete_failed", detail=str(exc)[:200])


def _private(chat_id: int) -> bool:
    return chat_id > 0  # groups and channels have negative ids
