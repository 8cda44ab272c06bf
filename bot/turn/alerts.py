"""Owner-side failures of someone else's turn, told to the owners: a paired user's message that
failed on a rejected key, a model that does not exist, a server that cannot be reached … is
answered with the short line (`failures.OWNER_NEEDED`), and each owner hears in their private
chat what failed and what to change: once per cause per `EVERY` seconds, so a busy group with
a revoked key does not flood them. A channel with no way to an owner's chat (the console,
whose user is the owner) tells nobody.
"""

from __future__ import annotations

import time

import structlog

from bot.errors import LLMCause, LLMError
from bot.llm import failures
from bot.models import Inbound
from bot.turn.access import AccessPolicy
from bot.turn.delivery import Delivery
from bot.turn.door import Reach

log = structlog.get_logger(__name__)
EVERY = 3600.0  # seconds: one alert per cause within this time
ALERT = "A message from {who} could not be answered. {what}"


class OwnerAlerts:
    def __init__(self, access: AccessPolicy, delivery: Delivery) -> None:
        self.access = access
        self.delivery = delivery
        self.reach: Reach | None = None
        self._told: dict[LLMCause, float] = {}  # when each cause was told (monotonic)

    def connect(self, reach: Reach) -> None:
        """The channel's way to a private chat: from now on owners are told."""
        self.reach = reach

    async def failed(self, error: LLMError, inbound: Inbound) -> None:
        """Tell the owners about `error`, a failure of `inbound`'s turn, when it is theirs to
        fix, the person was not an owner in their own chat, and the cause was not told lately."""
        if self.reach is None or error.cause not in failures.OWNER_MUST_FIX:
            return
        if inbound.is_private and self.access.is_owner(inbound.user_id):
            return  # they read the owner's words already
        now = time.monotonic()
        last = self._told.get(error.cause)
        if last is not None and now - last < EVERY:
            return
        self._told[error.cause] = now
        who = inbound.person or f"user {inbound.user_id}"
        text = ALERT.format(who=who, what=failures.for_owner(error))
        log.warning("owner_alerted", cause=str(error.cause), owners=len(self.access.owners()))
        for owner in sorted(self.access.owners()):
            try:
                await self.delivery.notice(text, self.reach(owner))
            except Exception:
                log.warning("owner_alert_failed", exc_info=True)
