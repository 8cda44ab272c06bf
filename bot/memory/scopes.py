"""Who sees what, the one owner of the privacy rule: the owner's private chat has
the global scope and sees the global memory plus that chat's own; every other chat sees only its
own memory. Nothing outside these scopes is ever read, searched or changed for a chat."""

from __future__ import annotations

from collections.abc import Iterable

from bot.models import GLOBAL_KEY, MemoryScope, scope_key


def chat_scope(scope: MemoryScope, session_key: str) -> MemoryScope | None:
    """The chat memory shown beside the global memory in the owner's private chat, else None
    (in any other chat the scope already is the chat's own)."""
    return MemoryScope(chat_key=session_key) if scope.is_global else None


def visible_scopes(scope: MemoryScope, session_key: str) -> tuple[MemoryScope, ...]:
    """Every scope whose files this chat sees, its own first."""
    extra = chat_scope(scope, session_key)
    return (scope,) if extra is None else (scope, extra)


def search_scopes(scope: MemoryScope, session_key: str) -> tuple[str, ...]:
    """The scope keys a chat may search: the owner's private chat sees global
    memory and its own chat's; every other chat only its own."""
    if scope.is_global:
        return (GLOBAL_KEY, session_key)
    return (scope_key(scope),)


def page_scopes(
    scope: MemoryScope, session_key: str, chats: Iterable[MemoryScope]
) -> tuple[MemoryScope, ...]:
    """The memory a person's page shows (`bot.web`), as their private chat (`scope`,
    `session_key`) would: an owner's the global memory, their own chat's and every other
    chat's (`chats`), as an owner in private lists every chat's reminders and usage; anyone
    else's only their own chat's."""
    if not scope.is_global:
        return visible_scopes(scope, session_key)
    return tuple(dict.fromkeys([*visible_scopes(scope, session_key), *chats]))


def may_see(scope: MemoryScope, session_key: str, target: MemoryScope) -> bool:
    """Whether a person's page may show or change `target` (`page_scopes`' rule)."""
    return scope.is_global or target in visible_scopes(scope, session_key)
