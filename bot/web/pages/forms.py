"""What the pages read from a request: a form's field as text, a scope as the pages name it
(`global`, or a chat's key), and a path to go back to that stays on this site."""

from __future__ import annotations

from collections.abc import Mapping

from bot.models import GLOBAL_SCOPE, MemoryScope

GLOBAL = "global"
MAX_FIELD = 1_000_000  # characters; the server takes 2 MB a request at most


def field(form: Mapping[str, object], name: str) -> str:
    """The field's text ("" when missing, or a file instead of text)."""
    value = form.get(name, "")
    return value[:MAX_FIELD] if isinstance(value, str) else ""


def scope_param(scope: MemoryScope) -> str:
    return scope.chat_key or GLOBAL


def scope_named(raw: str) -> MemoryScope:
    return GLOBAL_SCOPE if raw == GLOBAL else MemoryScope(chat_key=raw)


def local_path(raw: str, default: str) -> str:
    """`raw` when it is a path on this site (never `//elsewhere` or `https://…`)."""
    return raw if raw.startswith("/") and not raw.startswith("//") and "\\" not in raw else default
