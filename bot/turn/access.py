"""Who may talk to the bot, and whose memory a chat may see (`bot.memory.scopes`).

Owners (configured, or claimed with /claim) and allowed users (configured, or paired with
/pair: `bot.turn.pairing`) may chat; empty lists mean owners only, never everybody. Only an
owner's private chat sees the global memory; every other chat sees just its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.models import GLOBAL_SCOPE, Inbound, MemoryScope
from bot.settings import TelegramSettings
from bot.storage.roster import Roster, RosterStore
from bot.turn.pairing import real_owners

LOCAL_USER_ID = 0  # the person at the console (Telegram user ids are positive)


class AccessPolicy:
    def __init__(
        self,
        *,
        owner_ids: Iterable[int],
        allowed_user_ids: Iterable[int],
        roster: RosterStore | None = None,  # None: only the configured ids count
    ) -> None:
        self.configured_owners = frozenset(owner_ids)
        self.configured_allowed = frozenset(allowed_user_ids)
        self.roster = roster

    @classmethod
    def from_settings(cls, telegram: TelegramSettings, roster: RosterStore) -> AccessPolicy:
        """Who may talk: the settings' ids and the roster's."""
        return cls(
            owner_ids=real_owners(telegram.owner_ids),
            allowed_user_ids=telegram.allowed_user_ids,
            roster=roster,
        )

    def owners(self) -> frozenset[int]:
        """The owners' Telegram ids: configured and claimed (not the console's user)."""
        return self.configured_owners | self._roster().owner_ids

    def is_owner(self, user_id: int) -> bool:
        return user_id == LOCAL_USER_ID or user_id in self.owners()

    def allows(self, user_id: int) -> bool:
        if user_id in self.configured_allowed or self.is_owner(user_id):
            return True
        return user_id in self._roster().paired_ids

    def scope_for(self, inbound: Inbound) -> MemoryScope:
        if inbound.is_private:
            return self.private_scope(inbound.user_id, inbound.session_key)
        return MemoryScope(chat_key=inbound.session_key)

    def private_scope(self, user_id: int, session_key: str) -> MemoryScope:
        """What a person's private chat sees (and their memory page, `bot.web`)."""
        return GLOBAL_SCOPE if self.is_owner(user_id) else MemoryScope(chat_key=session_key)

    def _roster(self) -> Roster:
        return self.roster.current() if self.roster is not None else Roster()
