"""A file without a text, and with it again: the byte-level rewrites `Forgetting` makes.

Markdown and JSONL files lose every line holding the text (every other byte kept: their
encoding and line endings too, `bot.storage.textfile`; a line ends at "\n" only); a session
or job document marks every message holding it (`MARKER`). Putting back: a file as forget left
it gets its original bytes; one that only grew since gets the original plus what was added; a
document gets its messages' contents back where the marker still stands; any other change keeps
the file and adds the removed lines at its end. Pure functions over bytes, blocking I/O (on the
workspace's `Documents`) only in `put_back` and `job_of`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from bot import versioned
from bot.models import ChatMessage
from bot.storage.files import Documents
from bot.storage.lines import decode_text
from bot.storage.sessions import message_document
from bot.storage.textfile import lines_of, newline_of
from bot.storage.undo import Kept, digest

MARKER = "[forgotten]"
FORGET_MIN_CHARS = 3  # a shorter text would match too much


def forgotten(message: ChatMessage) -> bool:
    """Whether /forget emptied the message: it holds nothing to keep or to summarise."""
    return (message.content or "").strip() == MARKER


def without_lines(data: bytes, needle: str) -> tuple[bytes, list[str]] | None:
    if decode_text(data) is None:
        return None
    text = data.decode("utf-8", errors="surrogateescape")
    lowered = needle.casefold()
    kept: list[str] = []
    removed: list[str] = []
    for line in lines_of(text):
        (removed if lowered in line.casefold() else kept).append(line)
    printable = [_shown(_printable(line.rstrip("\r\n"))) for line in removed]
    return "".join(kept).encode("utf-8", errors="surrogateescape"), printable


def without_messages(data: bytes, needle: str) -> tuple[bytes, list[str]] | None:
    document = document_of(data)
    if document is None:
        return None
    lowered, removed = needle.casefold(), []
    for message in document["messages"]:
        if isinstance(message, dict) and lowered in _said(message).casefold():
            removed.append(" ".join(_said(message).split())[:200])  # a call: its arguments
            message["content"] = MARKER
            for call in message.get("tool_calls") or ():
                call["arguments"] = "{}"
    return _encode(document), removed


def _said(message: dict[str, Any]) -> str:
    calls = " ".join(str(c.get("arguments", "")) for c in message.get("tool_calls") or ())
    return f"{message.get('content') or ''} {calls}"


def unsaid(message: ChatMessage, needles: Sequence[str]) -> ChatMessage:
    """A message not yet saved, as `without_messages` would leave it in its session file."""
    said = " ".join([message.content or "", *(call.arguments for call in message.tool_calls)])
    if not any(needle.casefold() in said.casefold() for needle in needles):
        return message
    calls = tuple(replace(call, arguments="{}") for call in message.tool_calls)
    return replace(message, content=MARKER, tool_calls=calls)


def put_back(
    documents: Documents, kept: Kept, needle: str
) -> Literal["restored", "changed", "missing"]:
    current = documents.read(kept.path)
    if current is None:
        return "missing"
    if digest(current) == kept.written:
        documents.write(kept.path, kept.original)
        return "restored"
    if kept.kind == "messages":
        return _put_back_messages(documents, kept, current)
    return _put_back_lines(documents, kept, current, needle)


def _put_back_lines(
    documents: Documents, kept: Kept, current: bytes, needle: str
) -> Literal["restored", "changed"]:
    done = without_lines(kept.original, needle)  # what forget wrote, made again
    written = done[0] if done is not None and digest(done[0]) == kept.written else None
    if written is not None and current.startswith(written):  # only appended to since
        documents.write(kept.path, kept.original + current[len(written) :])
        return "restored"
    original = lines_of(kept.original.decode("utf-8", errors="surrogateescape"))
    now = current.decode("utf-8", errors="surrogateescape")
    lines = set(lines_of(now))
    back = "".join(line for line in original if line not in lines)
    joined = now if not now or now.endswith("\n") else now + newline_of(current)
    documents.write(kept.path, (joined + back).encode("utf-8", errors="surrogateescape"))
    return "changed"


def _put_back_messages(
    documents: Documents, kept: Kept, current: bytes
) -> Literal["restored", "changed", "missing"]:
    before, now = document_of(kept.original), document_of(current)
    if before is None or now is None:
        return "missing"
    marked = [m for m in now["messages"] if isinstance(m, dict) and m.get("content") == MARKER]
    for old in before["messages"]:
        twin = next((m for m in marked if _same(m, old)), None)
        if twin is not None and isinstance(old, dict):
            twin["content"] = old.get("content")
            if old.get("tool_calls"):
                twin["tool_calls"] = old["tool_calls"]
            marked.remove(twin)
    documents.write(kept.path, _encode(now))
    return "restored"


def _same(message: dict[str, Any], old: object) -> bool:
    if not isinstance(old, dict) or old.get("content") == MARKER:
        return False
    keys = ("role", "at", "turn", "tool_call_id")
    return all(message.get(key) == old.get(key) for key in keys)


# ----------------------------------------------------------------------------- documents


def document_of(data: bytes) -> dict[str, Any] | None:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        return None
    return document


def _encode(document: dict[str, Any]) -> bytes:
    return message_document(versioned.whole(document.get("version")), document).encode("utf-8")


def job_of(documents: Documents, path: Path) -> str | None:
    data = documents.read(path)
    document = None if data is None else document_of(data)
    return None if document is None else str(document.get("session_key"))


def _shown(line: str) -> str:
    """How a removed line reads in the receipt: an item's JSONL line as its text."""
    if not line.startswith("{"):
        return line
    try:
        item = json.loads(line)
    except ValueError:
        return line
    text = item.get("text") if isinstance(item, dict) else None
    return text if isinstance(text, str) else line


def _printable(line: str) -> str:
    return line.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
