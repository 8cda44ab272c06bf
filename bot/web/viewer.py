"""`Viewer`: the person a page is for, and what of memory they may see — the privacy rule is
`bot.memory.scopes`' (`page_scopes`, `may_see`), applied here on the server to every read and
every write, whatever a request asks for."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from bot.memory.scopes import may_see, page_scopes
from bot.models import MemoryScope
from bot.web.signin import Visitor


class People(Protocol):
    """Who may use the bot and what their private chat sees (`AccessPolicy`)."""

    def allows(self, user_id: int) -> bool: ...

    def is_owner(self, user_id: int) -> bool: ...

    def private_scope(self, user_id: int, session_key: str) -> MemoryScope: ...


@dataclass(frozen=True)
class Viewer:
    user: int
    chat: str  # their private chat's session key
    scope: MemoryScope  # what that chat sees: the global memory for an owner
    owner: bool

    def scopes(self, chats: Iterable[MemoryScope]) -> tuple[MemoryScope, ...]:
        """The memory their page shows, of `chats` (every chat with memory)."""
        return page_scopes(self.scope, self.chat, chats)

    def sees(self, target: MemoryScope) -> bool:
        return may_see(self.scope, self.chat, target)

    def sees_chat(self, key: str) -> bool:
        """Whether the chat `key`'s conversations and reminders are theirs to see."""
        return self.sees(MemoryScope(chat_key=key))

    def scope_of_chat(self, key: str) -> MemoryScope:
        """The memory the chat `key` sees (a forget there reaches it): their own private
        chat's as it sees it, any other chat its own."""
        return self.scope if key == self.chat else MemoryScope(chat_key=key)

    def chat_of_scope(self, scope: MemoryScope) -> str:
        """The chat whose conversations go with `scope` (a forget there sweeps them)."""
        return scope.chat_key or self.chat


def viewer_of(visitor: Visitor, people: People) -> Viewer | None:
    """The viewer a session is for, while they may still use the bot (an unpaired person's
    session ends with their pairing)."""
    if not people.allows(visitor.user):
        return None
    scope = people.private_scope(visitor.user, visitor.chat)
    return Viewer(visitor.user, visitor.chat, scope, people.is_owner(visitor.user))
