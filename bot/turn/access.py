"""Who may talk to the bot, and whose memory a chat may see (DESIGN §3).

Owners and allowed users may chat; empty lists mean owners only, never everybody. Only an
owner's private chat sees the global memory; every other chat sees just its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.models import GLOBAL_SCOPE, Inbound, MemoryScope

LOCAL_USER_ID = 0  # the person at the console (Telegram user ids are positive)


class AccessPolicy:
    def __init__(self, *, owner_ids: Iterable[int], allowed_user_ids: Iterable[int]) -> None:
        self.owner_ids = frozenset(owner_ids) | {LOCAL_USER_ID}
        self.allowed_ids = frozenset(allowed_user_ids) | self.owner_ids

    def is_owner(self, user_id: int) -> bool:
        return user_id in self.owner_ids

    def allows(self, user_id: int) -> bool:
        return user_id in self.allowed_ids

    def scope_for(self, inbound: Inbound) -> MemoryScope:
        if inbound.is_private and self.is_owner(inbound.user_id):
            return GLOBAL_SCOPE
        return MemoryScope(chat_key=inbound.session_key)
