"""A fake Telegram Bot API server for tests.

Real HTTP on 127.0.0.1 (aiohttp), so the real python-telegram-bot ``Bot``/``Application`` talks to
it through ``base_url``. It records every call, validates what a bot most often gets wrong
(empty or over-long text, broken entities, unbalanced HTML), answers long polls, and can inject
failures (``fail_next``) such as "can't parse entities" or 429 flood control. Drafts
(``sendMessageDraft``, private chats only) are recorded in ``drafts``; ``drafts_supported = False``
answers them 404, as a Bot API server older than 9.5 does.
Inline keyboards are checked as Telegram does (``callback_data`` of 1-64 bytes) and kept on the
message (``SentMessage.reply_markup``; an edit without one removes them); ``push_press`` queues a
callback query from a user pressing a button, answered once with ``answerCallbackQuery``
(``press_answers``).
It serves the
files of the messages it was given (``push_media``): getFile, then the download under
``base_file_url``, each download counted in ``downloads``.

    async with FakeTelegram() as tg:
        app = ApplicationBuilder().token(tg.token).base_url(tg.base_url).build()
        tg.push_text(chat_id=42, user_id=42, text="/start")
        [reply] = await tg.wait_for_messages(42, 1)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from aiohttp import web

from tests.fakes.local_server import LocalServer
from tests.fakes.webhook_delivery import WebhookDelivery

Params = dict[str, Any]
Predicate = Callable[[Params], bool]

DEFAULT_TOKEN = "123456:TEST-token-abc"
MAX_TEXT_UTF16 = 4096
MAX_DOWNLOAD = 20 * 1024 * 1024  # getFile: "Bad Request: file is too big" past this
FIRST_UPDATE_ID = 1000
CANT_PARSE_ENTITIES = (
    "Bad Request: can't parse entities: Can't find end of the entity starting at byte offset 5"
)
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a content and reply markup of the current message"
)
CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)
# PTB sends str values raw and everything else JSON-encoded, so a text of "42" or "true" arrives
# exactly like the number 42. Never JSON-decode parameters that are always strings.
RAW_STRING_PARAMS = frozenset(
    {
        "text",
        "caption",
        "parse_mode",
        "action",
        "language_code",
        "title",
        "description",
        "short_description",
        "name",
        "url",
        "secret_token",
        "emoji",
        "query",
        "callback_query_id",
        "inline_message_id",
        "business_connection_id",
        "message_effect_id",
    }
)
# The emoji a bot may react with (Bot API `ReactionTypeEmoji`; a sample of the full list).
REACTION_EMOJI = frozenset({
    "👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉",
    "🤩", "🙏", "👌", "🤡", "🥱", "😍", "💯", "🤣", "⚡", "🏆", "💔", "🤨", "😐",
    "😴", "😭", "🤓", "👻", "👀", "🙈", "😇", "🤝", "✍", "🤗", "🫡", "🤪", "🗿",
    "🆒", "🦄", "😎", "👾", "🤷", "😡",
})  # fmt: skip
HTML_TAGS = frozenset(
    {
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "span",
        "tg-spoiler",
        "a",
        "code",
        "pre",
        "blockquote",
        "tg-emoji",
        "tg-time",
    }
)


# ----------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ApiCall:
    """One request the bot made. ``failed`` is set for every non-ok answer (injected or not)."""

    method: str
    params: Params
    failed: bool = False
    error_code: int | None = None
    description: str | None = None


@dataclass(frozen=True)
class SentMessage:
    """The current state of a message the bot sent (edits update it, deletion marks it)."""

    chat_id: int | str
    text: str
    entities: list[dict[str, Any]] | None
    message_thread_id: int | None
    reply_to_message_id: int | None
    message_id: int
    parse_mode: str | None = None
    edit_count: int = 0
    deleted: bool = False
    reply_markup: dict[str, Any] | None = None
    sent_at: float = field(default_factory=time.monotonic, compare=False)  # kept through edits

    @property
    def buttons(self) -> list[tuple[str, str]]:
        """The inline keyboard's buttons as (text, callback_data), row after row."""
        rows = (self.reply_markup or {}).get("inline_keyboard", [])
        return [(b["text"], b.get("callback_data", "")) for row in rows for b in row]


@dataclass(frozen=True)
class ShownDraft:
    """One sendMessageDraft call: the text a private chat saw being written."""

    chat_id: int | str
    draft_id: int
    text: str
    entities: list[dict[str, Any]] | None
    message_thread_id: int | None


@dataclass(frozen=True)
class UploadedFile:
    """A multipart file field (e.g. a document the bot uploaded)."""

    filename: str
    content_type: str
    data: bytes


@dataclass(frozen=True)
class SentDocument:
    """A file the bot sent with sendDocument."""

    chat_id: int | str
    file: UploadedFile
    caption: str | None
    message_thread_id: int | None
    message_id: int


@dataclass
class _Failure:
    method: str
    error_code: int
    description: str
    retry_after: int | None
    times: int
    when: Predicate | None

    def matches(self, method: str, params: Params) -> bool:
        return self.method == method and (self.when is None or self.when(params))


class ApiError(Exception):
    """Raised by a method handler to answer ``{"ok": false, ...}``."""

    def __init__(self, error_code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.error_code = error_code
        self.description = description
        self.retry_after = retry_after

    def response(self) -> web.Response:
        body: dict[str, Any] = {
            "ok": False,
            "error_code": self.error_code,
            "description": self.description,
        }
        if self.retry_after is not None:
            body["parameters"] = {"retry_after": self.retry_after}
        return web.json_response(body, status=self.error_code)


# ----------------------------------------------------------------------------- helpers


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _now() -> int:
    return int(time.time())


def _decode(name: str, value: str) -> Any:
    if name in RAW_STRING_PARAMS:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


async def _read_params(request: web.Request) -> Params:
    params: Params = {k: _decode(k, v) for k, v in request.query.items()}
    if not request.body_exists:
        return params
    if request.content_type == "application/json":
        body = await request.json()
        if not isinstance(body, dict):
            raise ApiError(400, "Bad Request: request body must be a JSON object")
        params.update(body)
        return params
    form = await request.post()
    for key, value in form.items():
        if isinstance(value, str):
            params[key] = _decode(key, value)
        elif isinstance(value, web.FileField):
            params[key] = UploadedFile(value.filename, value.content_type, value.file.read())
        else:
            params[key] = bytes(value)
    return params


def _int_param(params: Params, name: str, default: int) -> int:
    value = params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ApiError(400, f"Bad Request: wrong parameter {name}") from None


def _chat_id(params: Params) -> int | str:
    chat_id = params.get("chat_id")
    if chat_id is None or chat_id == "":
        raise ApiError(400, "Bad Request: chat_id is empty")
    if isinstance(chat_id, bool) or not isinstance(chat_id, int | str):
        raise ApiError(400, "Bad Request: chat not found")
    return chat_id


def _reply_target(params: Params) -> int | None:
    reply = params.get("reply_parameters")
    if isinstance(reply, dict) and "message_id" in reply:
        return int(reply["message_id"])
    value = params.get("reply_to_message_id")
    return None if value is None else int(value)


def _command_entities(text: str) -> list[dict[str, Any]]:
    if not text.startswith("/"):
        return []
    command = text.split(maxsplit=1)[0]
    return [{"type": "bot_command", "offset": 0, "length": utf16_len(command)}]


def _infer_chat_type(chat_id: int | str) -> str:
    if isinstance(chat_id, str):
        return "channel"
    if chat_id > 0:
        return "private"
    return "supergroup" if chat_id < -1_000_000_000_000 else "group"


# ----------------------------------------------------------------------------- validation


class _HtmlChecker(HTMLParser):
    """Checks Telegram HTML is balanced and uses supported tags; collects the plain text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in HTML_TAGS:
            raise ApiError(
                400, f'Bad Request: can\'t parse entities: Unsupported start tag "{tag}"'
            )
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        expected = self.open.pop() if self.open else None
        if expected != tag:
            raise ApiError(
                400,
                f"Bad Request: can't parse entities: Unmatched end tag, "
                f'expected "</{expected}>", found "</{tag}>"',
            )

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def plain_text(self, text: str) -> str:
        self.feed(text)
        self.close()
        if self.open:
            raise ApiError(
                400,
                "Bad Request: can't parse entities: "
                f'Can\'t find end tag corresponding to start tag "{self.open[-1]}"',
            )
        return "".join(self.parts)


def _plain_text(text: str, parse_mode: Any) -> str:
    """The text as Telegram would display it; MarkdownV2/Markdown are accepted as-is."""
    if parse_mode in (None, ""):
        return text
    if not isinstance(parse_mode, str):
        raise ApiError(400, "Bad Request: unsupported parse_mode")
    mode = parse_mode.lower()
    if mode == "html":
        return _HtmlChecker().plain_text(text)
    if mode in ("markdown", "markdownv2"):
        return text
    raise ApiError(400, f"Bad Request: unsupported parse_mode {parse_mode}")


def _check_entities(text: str, entities: Any) -> list[dict[str, Any]]:
    prefix = "Bad Request: can't parse entities:"
    if not isinstance(entities, list):
        raise ApiError(400, f"{prefix} entities must be an array")
    size = utf16_len(text)
    for index, entity in enumerate(entities):
        if not isinstance(entity, dict) or not isinstance(entity.get("type"), str):
            raise ApiError(400, f"{prefix} entity {index} must be an object with a type")
        offset, length = entity.get("offset"), entity.get("length")
        if not isinstance(offset, int) or not isinstance(length, int):
            raise ApiError(400, f"{prefix} entity {index} needs integer offset and length")
        if offset < 0 or length <= 0 or offset + length > size:
            raise ApiError(
                400,
                f"{prefix} entity {index} ({entity['type']}, offset {offset}, length {length}) "
                f"is outside the text of {size} UTF-16 code units",
            )
    return entities


def _checked_markup(markup: Any) -> dict[str, Any] | None:
    """An inline keyboard as Telegram checks it: rows of buttons, each with a text and
    callback data of 1-64 bytes; None when there is none."""
    if markup is None or markup == "":
        return None
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
    for button in (b for row in rows for b in row):
        if not isinstance(button, dict) or not str(button.get("text") or "").strip():
            raise ApiError(400, "Bad Request: BUTTON_TEXT_INVALID")
        data = button.get("callback_data")
        if data is not None and not 1 <= len(str(data).encode("utf-8")) <= 64:
            raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
    return dict(markup)


def _checked_text(params: Params) -> tuple[str, list[dict[str, Any]] | None]:
    text = params.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ApiError(400, "Bad Request: message text is empty")
    plain = _plain_text(text, params.get("parse_mode"))
    if not plain.strip():
        raise ApiError(400, "Bad Request: message text is empty")
    if utf16_len(plain) > MAX_TEXT_UTF16:
        raise ApiError(400, "Bad Request: message is too long")
    entities = params.get("entities")
    if entities is None:
        return text, None
    return text, _check_entities(plain, entities)


# ----------------------------------------------------------------------------- the server


class FakeTelegram(LocalServer):
    """A fake Bot API server; see the module docstring."""

    def __init__(self, token: str = DEFAULT_TOKEN, *, username: str = "mnemo_test_bot") -> None:
        self._token = token
        bot_id = token.split(":", 1)[0]
        self.bot_user: dict[str, Any] = {
            "id": int(bot_id) if bot_id.isdigit() else 123456,
            "is_bot": True,
            "first_name": "Mnemo",
            "username": username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }
        self.calls: list[ApiCall] = []
        self.pushed_updates: list[dict[str, Any]] = []
        self._pending: list[dict[str, Any]] = []
        self._next_update_id = FIRST_UPDATE_ID
        self._last_message_id: dict[int | str, int] = {}
        self._sent: dict[tuple[int | str, int], SentMessage] = {}
        self._documents: list[SentDocument] = []
        self._reactions: dict[tuple[int | str, int], list[dict[str, Any]]] = {}
        self._incoming: dict[tuple[int | str, int], dict[str, Any]] = {}
        self._chats: dict[int | str, dict[str, Any]] = {}
        self._commands: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._failures: list[_Failure] = []
        self.drafts: list[ShownDraft] = []
        self.drafts_supported = True
        self._presses: set[str] = set()  # callback query ids not answered yet
        self.press_answers: dict[str, str] = {}  # callback query id → the text answered
        self._files: dict[str, tuple[bytes, int]] = {}  # file_id → (bytes served, size told)
        self.downloads: list[str] = []  # the file ids downloaded, in order
        self._poll_generation = 0
        self._polls_waiting = 0
        self._wakeup = asyncio.Event()
        self.webhook = WebhookDelivery(lambda: self._pending, self._confirm)
        super().__init__()
        self._methods: dict[str, Callable[[Params], Any]] = {
            "getMe": lambda _params: self.bot_user,
            "getUpdates": self._get_updates,
            "deleteWebhook": self._delete_webhook,
            "setWebhook": self._set_webhook,
            "getWebhookInfo": self._get_webhook_info,
            "setMyCommands": self._set_my_commands,
            "getMyCommands": self._get_my_commands,
            "deleteMyCommands": self._delete_my_commands,
            "sendChatAction": self._send_chat_action,
            "sendMessage": self._send_message,
            "sendDocument": self._send_document,
            "editMessageText": self._edit_message_text,
            "sendMessageDraft": self._send_message_draft,
            "deleteMessage": self._delete_message,
            "setMessageReaction": self._set_message_reaction,
            "answerCallbackQuery": self._answer_callback_query,
            "getFile": self._get_file,
            "close": lambda _params: True,
            "logOut": lambda _params: True,
        }
        self._by_lower_name = {name.lower(): name for name in self._methods}

    # --- lifecycle -------------------------------------------------------------------------

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        return app

    def on_stop(self) -> None:
        self._notify()

    async def stop(self) -> None:
        await self.webhook.close()
        await super().stop()

    @property
    def token(self) -> str:
        return self._token

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/file/bot"

    # --- test-side API ---------------------------------------------------------------------

    def push_update(self, raw: dict[str, Any]) -> int:
        """Queue an arbitrary update payload (``update_id`` is assigned); returns the id."""
        update_id = self._next_update_id
        self._next_update_id += 1
        update = {**raw, "update_id": update_id}
        self.pushed_updates.append(update)
        self._pending.append(update)
        self._notify()
        return update_id

    def push_text(
        self,
        chat_id: int,
        user_id: int,
        text: str,
        *,
        chat_type: str = "private",
        first_name: str = "Ann",
        username: str | None = None,
        message_thread_id: int | None = None,
        reply_to_message_id: int | None = None,
        chat_title: str | None = None,
        forwarded_from: str | None = None,  # a forward of this (hidden) sender's message
    ) -> int:
        """Queue a text message from a user; returns the update_id."""
        user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
        if username is not None:
            user["username"] = username
        chat = self._remember_chat(chat_id, chat_type, chat_title, user)
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "date": _now(),
            "chat": chat,
            "from": user,
            "text": text,
        }
        if entities := _command_entities(text):
            message["entities"] = entities
        if message_thread_id is not None:
            message["message_thread_id"] = message_thread_id
            message["is_topic_message"] = chat_type != "private"
        if reply_to_message_id is not None:
            message["reply_to_message"] = self._message_for_reply(chat_id, reply_to_message_id)
        if forwarded_from is not None:
            message["forward_origin"] = {
                "type": "hidden_user",
                "date": _now(),
                "sender_user_name": forwarded_from,
            }
        self._incoming[(chat_id, message["message_id"])] = message
        return self.push_update({"message": message})

    def push_media(
        self,
        chat_id: int,
        user_id: int,
        kind: str,
        *,
        first_name: str = "Ann",
        data: bytes = b"fake media",
        caption: str | None = None,
        file_name: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,  # the size Telegram tells (default: of `data`)
        chat_type: str = "private",
    ) -> int:
        """Queue a message holding a file or thing: a "sticker", a "photo", a "voice" note,
        an "audio" file, a "document", a "location"; its file is served (getFile)."""
        told = len(data) if size is None else size
        file_id = self.serve_file(data, size=told, file_id=f"{kind}-{self._next_update_id}")
        media: dict[str, Any] = {
            "file_id": file_id,
            "file_unique_id": f"u-{file_id}",
            "file_size": told,
        }
        named = {k: v for k, v in (("file_name", file_name), ("mime_type", mime_type)) if v}
        content = {
            "sticker": {**media, "type": "regular", "width": 512, "height": 512,
                        "is_animated": False, "is_video": False},
            "photo": [{**media, "file_id": f"{file_id}-small", "width": 90, "height": 90},
                      {**media, "width": 1280, "height": 960}],
            "voice": {**media, "duration": 2, "mime_type": mime_type or "audio/ogg"},
            "audio": {**media, "duration": 2, **named},
            "document": {**media, **named},
            "location": {"latitude": 48.85, "longitude": 2.35},
        }[kind]  # fmt: skip
        user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "date": _now(),
            "chat": self._remember_chat(chat_id, chat_type, None, user),
            "from": user,
            kind: content,
        }
        if caption is not None:
            message["caption"] = caption
        return self.push_update({"message": message})

    def push_press(
        self,
        chat_id: int,
        user_id: int,
        message_id: int,
        data: str,
        *,
        first_name: str = "Ann",
    ) -> str:
        """Queue a callback query: `user_id` pressed the button carrying `data` under the bot's
        message `message_id` in `chat_id`; returns the query id (see `press_answers`)."""
        sent = self._sent.get((chat_id, message_id))
        if sent is None:
            raise KeyError(f"the bot sent no message {message_id} to chat {chat_id}")
        query_id = f"q{len(self._presses) + len(self.press_answers) + 1}"
        user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
        self._presses.add(query_id)
        query = {
            "id": query_id,
            "from": user,
            "message": self._message_json(sent),
            "chat_instance": f"ci{chat_id}",
            "data": data,
        }
        self.push_update({"callback_query": query})
        return query_id

    async def wait_for_press_answer(
        self,
        query_id: str,
        timeout: float = 10.0,  # noqa: ASYNC109 - the deadline is part of this helper's API
    ) -> str:
        """Wait until the bot answered the press `query_id`; the text it answered."""
        if await self._wait_until(lambda: query_id in self.press_answers, timeout):
            return self.press_answers[query_id]
        raise TimeoutError(f"press {query_id} not answered within {timeout}s")

    def serve_file(self, data: bytes, *, size: int | None = None, file_id: str = "") -> str:
        """Serve `data` (getFile tells `size`, by default its own); the file id."""
        file_id = file_id or f"file-{len(self._files) + 1}"
        self._files[file_id] = (data, len(data) if size is None else size)
        return file_id

    def fail_next(
        self,
        method: str,
        *,
        error_code: int | None = None,
        description: str | None = None,
        retry_after: int | None = None,
        times: int = 1,
        when: Predicate | None = None,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` (matching ``when``) with an error.

        ``error_code`` defaults to 429 when ``retry_after`` is given, else 400. ``description``
        defaults to "Too Many Requests: retry after N" for 429, else a can't-parse-entities error.
        """
        code = error_code if error_code is not None else (429 if retry_after is not None else 400)
        if description is None:
            if code == 429:
                description = f"Too Many Requests: retry after {retry_after or 1}"
            else:
                description = CANT_PARSE_ENTITIES
        if code == 429 and retry_after is None:
            retry_after = 1
        self._failures.append(_Failure(method, code, description, retry_after, times, when))

    def calls_to(self, method: str) -> list[ApiCall]:
        return [call for call in self.calls if call.method == method]

    def sent_messages(self, chat_id: int | str | None = None) -> list[SentMessage]:
        """Messages the bot sent, in sending order, with edits applied."""
        return [m for m in self._sent.values() if chat_id is None or m.chat_id == chat_id]

    def sent_documents(self, chat_id: int | str | None = None) -> list[SentDocument]:
        """Files the bot sent, in sending order."""
        return [d for d in self._documents if chat_id is None or d.chat_id == chat_id]

    def reactions(self, chat_id: int | str, message_id: int) -> list[dict[str, Any]]:
        """The bot's reaction on a message (setMessageReaction), e.g.
        ``[{"type": "emoji", "emoji": "👀"}]``; [] when it set none or cleared it."""
        return list(self._reactions.get((chat_id, message_id), []))

    def bot_commands(
        self, scope: dict[str, Any] | None = None, language_code: str = ""
    ) -> list[dict[str, Any]]:
        """The commands last set with setMyCommands for this scope and language."""
        return list(self._commands.get(self._commands_key(scope, language_code), []))

    @property
    def pending_updates(self) -> list[dict[str, Any]]:
        """Updates not yet confirmed by a ``getUpdates`` offset."""
        return list(self._pending)

    async def wait_for_messages(
        self,
        chat_id: int | str,
        count: int,
        timeout: float = 10.0,  # noqa: ASYNC109 - the deadline is part of this helper's API
    ) -> list[SentMessage]:
        """Wait until at least ``count`` messages were sent to ``chat_id``; return them all."""
        if await self._wait_until(lambda: len(self.sent_messages(chat_id)) >= count, timeout):
            return self.sent_messages(chat_id)
        raise TimeoutError(
            f"expected {count} message(s) to chat {chat_id} within {timeout}s, "
            f"got {len(self.sent_messages(chat_id))}.\n{self._describe_traffic()}"
        )

    async def wait_for_text(
        self,
        chat_id: int | str,
        text: str,
        timeout: float = 10.0,  # noqa: ASYNC109 - the deadline is part of this helper's API
    ) -> SentMessage:
        """Wait until a message to ``chat_id`` not deleted holds ``text`` (sent or edited)."""

        def holding() -> SentMessage | None:
            return next(
                (m for m in self.sent_messages(chat_id) if m.text == text and not m.deleted), None
            )

        if await self._wait_until(lambda: holding() is not None, timeout):
            found = holding()
            assert found is not None
            return found
        raise TimeoutError(
            f"expected a message to chat {chat_id} holding {text[:40]!r}… within {timeout}s.\n"
            f"{self._describe_traffic()}"
        )

    async def wait_for_call(
        self,
        method: str,
        *,
        count: int = 1,
        timeout: float = 10.0,  # noqa: ASYNC109 - the deadline is part of this helper's API
    ) -> list[ApiCall]:
        """Wait until ``method`` was called at least ``count`` times; return those calls."""
        if await self._wait_until(lambda: len(self.calls_to(method)) >= count, timeout):
            return self.calls_to(method)
        raise TimeoutError(
            f"expected {count} call(s) to {method} within {timeout}s, "
            f"got {len(self.calls_to(method))}.\n{self._describe_traffic()}"
        )

    async def wait_for_poll(
        self,
        timeout: float = 10.0,  # noqa: ASYNC109 - the deadline is part of this helper's API
    ) -> None:
        """Wait until a getUpdates long poll is waiting (the bot is idle and listening)."""
        if not await self._wait_until(lambda: self._polls_waiting > 0, timeout):
            raise TimeoutError(f"no getUpdates long poll within {timeout}s")

    # --- plumbing --------------------------------------------------------------------------

    def _notify(self) -> None:
        self.webhook.wake()
        self._wakeup.set()
        self._wakeup = asyncio.Event()

    async def _wait_until(self, predicate: Callable[[], bool], within: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0 or self._closing:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), remaining)
        return True

    def _describe_traffic(self) -> str:
        sent = [
            f"  chat {m.chat_id} #{m.message_id}: {m.text[:200]!r}" for m in self._sent.values()
        ]
        methods = [c.method + (" (failed)" if c.failed else "") for c in self.calls]
        return "Sent messages:\n" + ("\n".join(sent) or "  (none)") + f"\nCalls: {methods}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self._token:
            return ApiError(401, "Unauthorized").response()
        requested = request.match_info["method"]
        method = self._by_lower_name.get(requested.lower(), requested)
        try:
            params = await _read_params(request)
        except ApiError as exc:
            self._record(ApiCall(method, {}, True, exc.error_code, exc.description))
            return exc.response()
        try:
            result = await self._dispatch(method, params)
        except ApiError as exc:
            if request.transport is not None:  # a superseded long poll whose client left
                self._record(ApiCall(method, params, True, exc.error_code, exc.description))
            return exc.response()
        self._record(ApiCall(method, params))
        return web.json_response({"ok": True, "result": result})

    async def _dispatch(self, method: str, params: Params) -> Any:
        handler = self._methods.get(method)
        if handler is None:
            raise ApiError(404, "Not Found")
        self._raise_injected_failure(method, params)
        result = handler(params)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _raise_injected_failure(self, method: str, params: Params) -> None:
        for failure in self._failures:
            if failure.matches(method, params):
                failure.times -= 1
                if failure.times <= 0:
                    self._failures.remove(failure)
                raise ApiError(failure.error_code, failure.description, failure.retry_after)

    def _record(self, call: ApiCall) -> None:
        self.calls.append(call)
        self._notify()

    def _next_message_id(self, chat_id: int | str) -> int:
        self._last_message_id[chat_id] = self._last_message_id.get(chat_id, 0) + 1
        return self._last_message_id[chat_id]

    def _remember_chat(
        self, chat_id: int, chat_type: str, title: str | None, user: dict[str, Any]
    ) -> dict[str, Any]:
        chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat.update({k: v for k, v in user.items() if k in ("first_name", "username")})
        else:
            chat["title"] = title or f"Test {chat_type}"
        self._chats[chat_id] = chat
        return chat

    def _chat(self, chat_id: int | str) -> dict[str, Any]:
        return self._chats.get(chat_id) or {"id": chat_id, "type": _infer_chat_type(chat_id)}

    def _message_for_reply(self, chat_id: int | str, message_id: int) -> dict[str, Any]:
        if (chat_id, message_id) in self._incoming:
            return self._incoming[(chat_id, message_id)]
        if (chat_id, message_id) in self._sent:
            return self._message_json(self._sent[(chat_id, message_id)])
        return {"message_id": message_id, "date": _now(), "chat": self._chat(chat_id)}

    def _message_json(self, sent: SentMessage) -> dict[str, Any]:
        message: dict[str, Any] = {
            "message_id": sent.message_id,
            "date": _now(),
            "chat": self._chat(sent.chat_id),
            "from": self.bot_user,
            "text": sent.text,
        }
        if sent.entities:
            message["entities"] = sent.entities
        if sent.message_thread_id is not None:
            message["message_thread_id"] = sent.message_thread_id
            message["is_topic_message"] = self._chat(sent.chat_id)["type"] != "private"
        if sent.reply_to_message_id is not None:
            message["reply_to_message"] = self._message_for_reply(
                sent.chat_id, sent.reply_to_message_id
            )
        if sent.edit_count:
            message["edit_date"] = _now()
        if sent.reply_markup:
            message["reply_markup"] = sent.reply_markup
        return message

    # --- Bot API methods -------------------------------------------------------------------

    async def _get_updates(self, params: Params) -> list[dict[str, Any]]:
        if self.webhook.active:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active")
        offset = _int_param(params, "offset", 0)
        limit = min(max(_int_param(params, "limit", 100), 1), 100)
        timeout = max(_int_param(params, "timeout", 0), 0)
        if offset > 0:
            self._pending = [u for u in self._pending if u["update_id"] >= offset]
        elif offset < 0:
            self._pending = self._pending[offset:]
        self._poll_generation += 1
        generation = self._poll_generation
        self._polls_waiting += 1
        self._notify()
        try:
            await self._wait_until(
                lambda: bool(self._pending) or self._poll_generation != generation, timeout
            )
        finally:
            self._polls_waiting -= 1
        if self._poll_generation != generation:
            raise ApiError(
                409,
                "Conflict: terminated by other getUpdates request; "
                "make sure that only one bot instance is running",
            )
        return self._pending[:limit]

    def _delete_webhook(self, params: Params) -> bool:
        self.webhook.urls.clear()
        if params.get("drop_pending_updates") is True:
            self._pending.clear()
        return True

    def _get_webhook_info(self, _params: Params) -> dict[str, Any]:
        pending = len(self._pending)
        url = self.webhook.urls[0] if self.webhook.urls else ""
        return {"url": url, "has_custom_certificate": False, "pending_update_count": pending}

    def _set_webhook(self, params: Params) -> bool:
        """Deliver by webhook from now on: round robin over every URL set (`WebhookDelivery`)."""
        max_connections = _int_param(params, "max_connections", 40)
        if not 1 <= max_connections <= 100:
            raise ApiError(400, "Bad Request: bad webhook: max_connections must be in 1..100")
        secret = str(params.get("secret_token") or "")
        self.webhook.register(str(params["url"]), secret, max_connections)
        return True

    def _confirm(self, update_id: int) -> None:
        """An update a webhook answered 2xx: Telegram forgets it."""
        self._pending = [u for u in self._pending if u["update_id"] != update_id]

    @staticmethod
    def _commands_key(scope: Any, language_code: Any) -> tuple[str, str]:
        scope = scope or {"type": "default"}
        return json.dumps(scope, sort_keys=True), str(language_code or "")

    def _set_my_commands(self, params: Params) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise ApiError(400, "Bad Request: can't parse commands JSON object")
        for command in commands:
            name = command.get("command", "") if isinstance(command, dict) else ""
            if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]{1,32}", name):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(command.get("description", "")) <= 256:
                raise ApiError(400, "Bad Request: command description is empty or too long")
        key = self._commands_key(params.get("scope"), params.get("language_code"))
        self._commands[key] = commands
        return True

    def _get_my_commands(self, params: Params) -> list[dict[str, Any]]:
        key = self._commands_key(params.get("scope"), params.get("language_code"))
        return self._commands.get(key, [])

    def _delete_my_commands(self, params: Params) -> bool:
        key = self._commands_key(params.get("scope"), params.get("language_code"))
        self._commands.pop(key, None)
        return True

    def _send_chat_action(self, params: Params) -> bool:
        _chat_id(params)
        if params.get("action") not in CHAT_ACTIONS:
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        return True

    def _send_message(self, params: Params) -> dict[str, Any]:
        chat_id = _chat_id(params)
        text, entities = _checked_text(params)
        thread = params.get("message_thread_id")
        sent = SentMessage(
            chat_id=chat_id,
            text=text,
            entities=entities,
            message_thread_id=None if thread is None else int(thread),
            reply_to_message_id=_reply_target(params),
            message_id=self._next_message_id(chat_id),
            parse_mode=params.get("parse_mode"),
            reply_markup=_checked_markup(params.get("reply_markup")),
        )
        self._sent[(chat_id, sent.message_id)] = sent
        return self._message_json(sent)

    def _send_message_draft(self, params: Params) -> bool:
        if not self.drafts_supported:
            raise ApiError(404, "Not Found")
        chat_id = _chat_id(params)
        if self._chat(chat_id)["type"] != "private":
            raise ApiError(400, "Bad Request: chat must be a private chat")
        draft_id = _int_param(params, "draft_id", 0)
        if draft_id == 0:
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        text, entities = _checked_text(params)
        thread = params.get("message_thread_id")
        draft = ShownDraft(
            chat_id, draft_id, text, entities, None if thread is None else int(thread)
        )
        self.drafts.append(draft)
        return True

    def _send_document(self, params: Params) -> dict[str, Any]:
        chat_id = _chat_id(params)
        file = params.get("document")
        if not isinstance(file, UploadedFile) or not file.data:
            raise ApiError(400, "Bad Request: file must be non-empty")
        caption = params.get("caption")
        if caption is not None and utf16_len(caption) > 1024:
            raise ApiError(400, "Bad Request: message caption is too long")
        thread = params.get("message_thread_id")
        sent = SentDocument(
            chat_id=chat_id,
            file=file,
            caption=caption,
            message_thread_id=None if thread is None else int(thread),
            message_id=self._next_message_id(chat_id),
        )
        self._documents.append(sent)
        return {
            "message_id": sent.message_id,
            "date": _now(),
            "chat": self._chat(chat_id),
            "from": self.bot_user,
            "document": {
                "file_id": f"doc-{sent.message_id}",
                "file_unique_id": f"u-doc-{sent.message_id}",
                "file_name": file.filename,
                "mime_type": file.content_type,
                "file_size": len(file.data),
            },
            **({"caption": caption} if caption else {}),
        }

    def _edit_message_text(self, params: Params) -> dict[str, Any] | bool:
        if params.get("inline_message_id"):
            _checked_text(params)
            return True
        key = (_chat_id(params), _int_param(params, "message_id", 0))
        if key in self._incoming:
            raise ApiError(400, "Bad Request: message can't be edited")
        old = self._sent.get(key)
        if old is None or old.deleted:
            raise ApiError(400, "Bad Request: message to edit not found")
        text, entities = _checked_text(params)
        markup = _checked_markup(params.get("reply_markup"))
        same_markup = markup == old.reply_markup
        if text == old.text and (entities or None) == (old.entities or None) and same_markup:
            raise ApiError(400, NOT_MODIFIED)
        new = dataclasses.replace(
            old,
            text=text,
            entities=entities,
            parse_mode=params.get("parse_mode"),
            edit_count=old.edit_count + 1,
            reply_markup=markup,
        )
        self._sent[key] = new
        return self._message_json(new)

    def _set_message_reaction(self, params: Params) -> bool:
        key = (_chat_id(params), _int_param(params, "message_id", 0))
        if key not in self._incoming and key not in self._sent:
            raise ApiError(400, "Bad Request: message to react not found")
        reaction = params.get("reaction") or []
        if not isinstance(reaction, list) or len(reaction) > 1:
            raise ApiError(400, "Bad Request: REACTIONS_TOO_MANY")
        for kind in reaction:
            if not isinstance(kind, dict) or kind.get("type") != "emoji":
                raise ApiError(400, "Bad Request: REACTION_INVALID")
            if kind.get("emoji") not in REACTION_EMOJI:
                raise ApiError(400, "Bad Request: REACTION_INVALID")
        self._reactions[key] = reaction
        return True

    def _answer_callback_query(self, params: Params) -> bool:
        query_id = params.get("callback_query_id")
        if not isinstance(query_id, str) or query_id not in self._presses:
            raise ApiError(
                400,
                "Bad Request: query is too old and response timeout expired or query ID is invalid",
            )
        text = params.get("text") or ""
        if utf16_len(text) > 200:
            raise ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        self._presses.discard(query_id)
        self.press_answers[query_id] = text
        return True

    def _get_file(self, params: Params) -> dict[str, Any]:
        file_id = str(params.get("file_id") or "")
        if file_id not in self._files:
            raise ApiError(400, "Bad Request: invalid file_id")
        size = self._files[file_id][1]
        if size > MAX_DOWNLOAD:
            raise ApiError(400, "Bad Request: file is too big")
        return {
            "file_id": file_id,
            "file_unique_id": f"u-{file_id}",
            "file_size": size,
            "file_path": f"media/{file_id}",
        }

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self._token:
            return web.Response(status=401)
        file_id = request.match_info["path"].removeprefix("media/")
        if file_id not in self._files:
            return web.Response(status=404)
        self.downloads.append(file_id)
        self._notify()
        return web.Response(body=self._files[file_id][0])

    def _delete_message(self, params: Params) -> bool:
        key = (_chat_id(params), _int_param(params, "message_id", 0))
        if self._incoming.pop(key, None) is not None:
            return True
        old = self._sent.get(key)
        if old is None or old.deleted:
            raise ApiError(400, "Bad Request: message to delete not found")
        self._sent[key] = dataclasses.replace(old, deleted=True)
        return True
