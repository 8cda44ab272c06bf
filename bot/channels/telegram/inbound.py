"""A Telegram update as an `Inbound`, or None when it is not for us (a command addressed to
another bot, a service message). A group message that does not address the bot is an `Inbound`
with `addressed=False` (chatter, kept as context: see `bot.turn.router`). A photo (its largest
size), a voice note, an audio file, a document or anything else (a sticker, a location, a video
…) becomes an `Attachment`, its caption the text; `bot.media` reads it before the turn. A
forwarded message is marked `forwarded`: its words are someone else's (`bot.memory.trust`)."""

from __future__ import annotations

import re
from datetime import UTC, timedelta
from typing import Any

from telegram import Audio, Chat, Message, Update, User, Voice

from bot.models import Attachment, AttachmentKind, ChatType, Inbound

CHANNEL = "telegram"
# the updates we ask for: new messages (not edits, not channel posts), presses of our buttons
ALLOWED = ["message", "callback_query"]
# what a message may hold besides text that we only name (kind "other"), in PTB's words
OTHER_CONTENT = (
    "sticker", "video", "video_note", "animation", "location", "venue", "contact", "poll",
    "dice", "game", "story", "paid_media", "checklist",
)  # fmt: skip
_CHAT_TYPES: dict[str, ChatType] = {
    "private": "private",
    "group": "group",
    "supergroup": "supergroup",
    "channel": "channel",
}


def to_inbound(update: Update, *, bot_username: str | None) -> Inbound | None:
    message, chat, user = update.effective_message, update.effective_chat, update.effective_user
    if message is None or chat is None or user is None:
        return None
    attachments = attachments_of(message)
    if message.text is None and not attachments:
        return None
    text = message.text if message.text is not None else (message.caption or "")
    if chat.type != "private":
        addressed = _addressed_text(text, message, bot_username)
        if addressed is None:
            if not text or text.startswith("/"):  # chatter is text: a caption, not a file
                return None
            return _inbound(update, message, chat, user, text, (), addressed=False)
        text = addressed
    return _inbound(update, message, chat, user, text, attachments)


def attachments_of(message: Message) -> tuple[Attachment, ...]:
    """What the message holds besides its text (a message holds one at most)."""
    if message.photo:
        largest = max(message.photo, key=lambda size: size.width * size.height)
        return (Attachment("photo", largest.file_id, None, "image/jpeg", largest.file_size),)
    if (voice := message.voice) is not None:
        return (_sound("voice", voice.file_id, None, voice.mime_type, voice.file_size, voice),)
    if (audio := message.audio) is not None:
        file = (audio.file_id, audio.file_name, audio.mime_type, audio.file_size)
        return (_sound("audio", *file, audio),)
    if (document := message.document) is not None:
        file = (document.file_id, document.file_name, document.mime_type, document.file_size)
        return (Attachment("document", *file),)
    what = next((name for name in OTHER_CONTENT if getattr(message, name, None)), None)
    return () if what is None else (Attachment("other", "", what=what.replace("_", " ")),)


def _sound(
    kind: AttachmentKind,
    file_id: str,
    name: str | None,
    mime_type: str | None,
    size: int | None,
    sound: Voice | Audio,
) -> Attachment:
    length = sound.duration
    seconds = int(length.total_seconds()) if isinstance(length, timedelta) else int(length)
    return Attachment(kind, file_id, name, mime_type, size, seconds)


def _inbound(
    update: Update,
    message: Message,
    chat: Chat,
    user: User,
    text: str,
    attachments: tuple[Attachment, ...],
    *,
    addressed: bool = True,
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
        user_display_name=display_name(user),
        addressed=addressed,
        attachments=attachments,
        forwarded=message.forward_origin is not None,
    )


def display_name(user: User) -> str:
    """The person's name, and their username when they have one: `Ann Lee (@ann)`."""
    return f"{user.full_name} (@{user.username})" if user.username else user.full_name


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
