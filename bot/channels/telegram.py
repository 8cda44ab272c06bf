"""The Telegram channel: the only module that imports python-telegram-bot.

Long polling; chats processed concurrently, one chat strictly in order (`ChatOrderedProcessor`;
`/stop` jumps its chat's queue); updates become `Inbound`s for the turn runner; replies go out
as text + entities, split under the limit, resent as plain text if Telegram rejects the
entities; a typing indicator while the model works; AIORateLimiter retries 429s.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator, Awaitable
from datetime import UTC
from typing import Any

import structlog
from telegram import Bot as PTBBot
from telegram import BotCommand, MessageEntity, Update
from telegram.constants import ChatAction
from telegram.error import BadRequest, TelegramError
from telegram.ext import (
    AIORateLimiter,
    Application,
    ApplicationBuilder,
    BaseUpdateProcessor,
    ContextTypes,
    MessageHandler,
    filters,
)

from bot.channels.telegram_format import Chunk, render
from bot.models import ChatType, Inbound
from bot.turn.chats import ChatLocks
from bot.turn.commands import COMMANDS, parse_command
from bot.turn.runner import TurnRunner

log = structlog.get_logger(__name__)
# Opt in to PTB 23's `RetryAfter.retry_after` as a timedelta (AIORateLimiter reads it either way);
# without this every 429 raises a PTBDeprecationWarning.
os.environ.setdefault("PTB_TIMEDELTA", "true")

CHANNEL = "telegram"
SORRY = "Sorry, something went wrong on my side. Please try again."
TEXT_ONLY = "I can only read text messages for now."
_CHAT_TYPES: dict[str, ChatType] = {
    "private": "private",
    "group": "group",
    "supergroup": "supergroup",
    "channel": "channel",
}


class ChatOrderedProcessor(BaseUpdateProcessor):
    """Different chats run concurrently; one chat's updates run in arrival order."""

    def __init__(self, max_concurrent_updates: int = 256) -> None:
        super().__init__(max_concurrent_updates)
        self._locks = ChatLocks()

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        key = _order_key(update)
        if key is None:
            await coroutine
            return
        async with self._locks.hold(key):
            await coroutine

    async def initialize(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None


def _order_key(update: object) -> str | None:
    """The chat an update must wait its turn in; None for updates that jump the queue."""
    if not isinstance(update, Update) or update.effective_chat is None:
        return None
    message = update.effective_message
    text = message.text if message is not None else None
    command = parse_command(text or "")
    if command is not None and command.name == "stop":
        return None
    thread = message.message_thread_id if message is not None else None
    return f"{update.effective_chat.id}:{thread}"


class TelegramReplier:
    """Answers one chat (and forum topic): formatted, split, with a plain-text fallback."""

    def __init__(
        self, bot: PTBBot, chat_id: int, thread_id: int | None, *, typing_interval: float
    ) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.thread_id = thread_id
        self.typing_interval = typing_interval

    async def send(self, text: str) -> None:
        for chunk in render(text):
            await self._send_chunk(chunk)

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self._keep_typing())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _send_chunk(self, chunk: Chunk) -> None:
        entities = [MessageEntity(**entity) for entity in chunk.entities]
        try:
            await self.bot.send_message(
                self.chat_id, chunk.text, entities=entities, message_thread_id=self.thread_id
            )
        except BadRequest as exc:
            if "can't parse entities" not in exc.message.lower():
                raise
            log.warning("entities_rejected_sending_plain", detail=exc.message[:200])
            await self.bot.send_message(self.chat_id, chunk.text, message_thread_id=self.thread_id)

    async def _keep_typing(self) -> None:
        while True:
            try:
                await self.bot.send_chat_action(
                    self.chat_id, ChatAction.TYPING, message_thread_id=self.thread_id
                )
            except TelegramError as exc:
                log.debug("typing_failed", detail=str(exc)[:200])
            await asyncio.sleep(self.typing_interval)


class TelegramChannel:
    def __init__(
        self,
        runner: TurnRunner,
        *,
        token: str,
        base_url: str,
        poll_timeout: int,
        typing_interval: float,
    ) -> None:
        self.runner = runner
        self.token = token
        self.base_url = base_url
        self.poll_timeout = poll_timeout
        self.typing_interval = typing_interval

    async def run(self, stop: asyncio.Event) -> None:
        """Start, replay what a crash left unanswered, poll until `stop` is set, stop cleanly."""
        app = self.build_application()
        async with app:
            await app.bot.set_my_commands([BotCommand(name, text) for name, text in COMMANDS])
            await app.start()
            replayed = await self.runner.replay(
                lambda inbound: self._replier(app.bot, inbound), channel=CHANNEL
            )
            log.info("telegram_started", bot=app.bot.username, replayed=replayed)
            assert app.updater is not None
            await app.updater.start_polling(poll_interval=0.0, timeout=self.poll_timeout)
            await stop.wait()
            log.info("telegram_stopping")
            await app.updater.stop()
            await app.stop()

    def build_application(self) -> Application[Any, Any, Any, Any, Any, Any]:
        app = (
            ApplicationBuilder()
            .token(self.token)
            .base_url(self.base_url)
            .base_file_url(_file_url(self.base_url))
            .rate_limiter(AIORateLimiter(max_retries=3))
            .concurrent_updates(ChatOrderedProcessor())
            .build()
        )
        app.add_handler(MessageHandler(filters.TEXT & filters.UpdateType.MESSAGE, self._on_text))
        app.add_handler(
            MessageHandler(
                filters.ChatType.PRIVATE & filters.UpdateType.MESSAGE & ~filters.TEXT,
                self._on_other,
            )
        )
        app.add_error_handler(self._on_error)
        return app

    async def _on_text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        inbound = to_inbound(update, bot_username=context.bot.username)
        if inbound is None:
            return
        await self.runner.handle(inbound, self._replier(context.bot, inbound))

    async def _on_other(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if update.effective_message is not None:
            await update.effective_message.reply_text(TEXT_ONLY)

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.error("update_failed", exc_info=context.error)
        if isinstance(update, Update) and update.effective_chat is not None:
            with contextlib.suppress(TelegramError):
                await context.bot.send_message(update.effective_chat.id, SORRY)

    def _replier(self, bot: PTBBot, inbound: Inbound) -> TelegramReplier:
        return TelegramReplier(
            bot, inbound.chat_id, inbound.thread_id, typing_interval=self.typing_interval
        )


def to_inbound(update: Update, *, bot_username: str | None) -> Inbound | None:
    """An update as an `Inbound`, or None when it is not for us (a group chat not addressing us)."""
    message, chat, user = update.effective_message, update.effective_chat, update.effective_user
    if message is None or chat is None or user is None or message.text is None:
        return None
    text = message.text
    if chat.type != "private":
        addressed = _addressed_text(message.text, message, bot_username)
        if addressed is None:
            return None
        text = addressed
    return Inbound(
        id=f"{CHANNEL}:update:{update.update_id}",
        channel=CHANNEL,
        chat_id=chat.id,
        user_id=user.id,
        text=text,
        received_at=message.date.astimezone(UTC),
        chat_type=_CHAT_TYPES.get(chat.type, "group"),
        thread_id=message.message_thread_id if message.is_topic_message else None,
        message_id=message.message_id,
        reply_to_message_id=message.reply_to_message.message_id
        if message.reply_to_message
        else None,
        user_name=user.username or user.first_name,
    )


def _addressed_text(text: str, message: Any, bot_username: str | None) -> str | None:
    """In groups: the text when it mentions us, replies to us or is a command; else None."""
    mention = f"@{bot_username}" if bot_username else None
    if text.startswith("/"):
        command = text.split(" ", 1)[0].lower()
        targeted = "@" not in command or (mention is not None and command.endswith(mention.lower()))
        return text if targeted else None
    found = re.search(rf"(?<![\w@]){re.escape(mention)}(?!\w)", text, re.I) if mention else None
    if found is not None:
        return (text[: found.start()] + text[found.end() :]).strip() or text
    replied = message.reply_to_message
    author = replied.from_user if replied is not None else None
    if author is not None and author.is_bot and author.username == bot_username:
        return text
    return None


async def check_token(token: str, base_url: str) -> str:
    """The bot's @username, proving the token and base URL work."""
    bot = PTBBot(token, base_url=base_url, base_file_url=_file_url(base_url))
    async with bot:
        return f"@{bot.username}"


def _file_url(base_url: str) -> str:
    head, sep, _ = base_url.rstrip("/").rpartition("/bot")
    return f"{head}/file/bot" if sep else base_url
