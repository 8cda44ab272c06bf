"""Buttons under the bot's messages: a `Keyed` message's inline keyboard, and a press
(a callback query) as a `Press`, answered in place: the message edited to say what happened
(its buttons gone), then `answerCallbackQuery` with a short notice.

Presses are answered beside the polling loop (`Presses`), so a press that waits for a chat's
turn to end never holds up the next poll; a stop waits a moment for those still running.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog
from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import TelegramError

from bot.channels.telegram.inbound import CHANNEL
from bot.models import Keyed, Press, Pressed

log = structlog.get_logger(__name__)
NOTICE_CHARS = 200  # Telegram shows at most this much of a callback answer
STOPPED = "I am restarting; press again in a moment."

Answer = Callable[[Press], Awaitable[Pressed]]


def keyboard(keyed: Keyed) -> InlineKeyboardMarkup:
    """The buttons in one row."""
    row = [InlineKeyboardButton(b.label, callback_data=b.data) for b in keyed.buttons]
    return InlineKeyboardMarkup([row])


def to_press(query: CallbackQuery) -> Press | None:
    """A press on one of our messages; None for one without a message or data (an inline
    message's, or a game's)."""
    message = query.message
    if message is None or not isinstance(query.data, str):
        return None
    thread = getattr(message, "message_thread_id", None)
    topic = thread if getattr(message, "is_topic_message", False) else None
    return Press(
        channel=CHANNEL,
        chat_id=message.chat.id,
        user_id=query.from_user.id,
        data=query.data,
        message_id=message.message_id,
        thread_id=topic,
    )


class Presses:
    """Presses being answered, each in a task of its own."""

    def __init__(self, bot: Bot, answer: Answer | None) -> None:
        self.bot = bot
        self.answer = answer
        self._tasks: set[asyncio.Task[None]] = set()

    def take(self, update: Update) -> bool:
        """True when `update` is a press (answered soon); False for anything else."""
        query = update.callback_query
        if query is None:
            return False
        task = asyncio.create_task(self._answer(query), name="telegram-press")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def close(self, grace: float) -> None:
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=grace)
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _answer(self, query: CallbackQuery) -> None:
        press = to_press(query)
        try:
            if press is None or self.answer is None:
                pressed = Pressed("This button does nothing any more.")
            else:
                pressed = await self.answer(press)
            if pressed.text is not None and press is not None and press.message_id is not None:
                await self.bot.edit_message_text(
                    pressed.text, chat_id=press.chat_id, message_id=press.message_id
                )
            await self.bot.answer_callback_query(query.id, text=pressed.notice[:NOTICE_CHARS])
        except TelegramError as exc:
            log.warning("press_answer_failed", error=type(exc).__name__, detail=str(exc)[:200])
        except Exception:  # a press's boundary: logged, the polling goes on
            log.exception("press_failed")
