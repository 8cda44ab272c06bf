"""Who sees what, the one owner of the privacy rule: the owner's private chat has
the global scope and sees the global memory plus that chat's own; every other chat sees only its
own memory. Nothing outside these scopes is ever read, searched or changed for a chat."""

from __future__ import annotations

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
