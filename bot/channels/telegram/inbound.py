"""A Telegram update as an `Inbound`, or None when it is not for us. A group message that does
not address the bot is an `Inbound` with `addressed=False` (chatter, kept as context: see
`bot.turn.runner`); a command addressed to another bot is None."""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

from telegram import Chat, Message, Update, User

from bot.models import ChatType, Inbound

CHANNEL = "telegram"
_CHAT_TYPES: dict[str, ChatType] = {
    "private": "private",
    "group": "group",
    "supergroup": "supergroup",
    "channel": "channel",
}


def to_inbound(update: Update, *, bot_username: str | None) -> Inbound | None:
    message, chat, user = update.effective_message, update.effective_chat, update.effective_user
    if message is None or chat is None or user is None or message.text is None:
        return None
    text = message.text
    if chat.type != "private":
        addressed = _addressed_text(message.text, message, bot_username)
        if addressed is None:
            chatter = not text.startswith("/")
            return _inbound(update, message, chat, user, text, addressed=False) if chatter else None
        text = addressed
    return _inbound(update, message, chat, user, text)


def unreadable(update: Update) -> Inbound | None:
    """A private message we cannot read (a photo, a sticker, a voice note …) as an `Inbound`
    with no text: a stranger's gets the door's notice, anyone else's `TEXT_ONLY`."""
    message, chat, user = update.message, update.effective_chat, update.effective_user
    if message is None or chat is None or user is None or chat.type != "private":
        return None
    return None if message.text else _inbound(update, message, chat, user, "")


def _inbound(
    update: Update, message: Message, chat: Chat, user: User, text: str, *, addressed: bool = True
) -> Inbound:
    return Inbound(
        id=f"{CHANNEL}:update:{update.update_id}",  # `update_id_of` reads it back
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
        addressed=addressed,
    )


def update_id_of(inbound_id: str) -> int | None:
    """The Telegram update id in an `Inbound.id` made by `to_inbound`."""
    prefix = f"{CHANNEL}:update:"
    tail = inbound_id.removeprefix(prefix)
    return int(tail) if inbound_id.startswith(prefix) and tail.isdigit() else None


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
