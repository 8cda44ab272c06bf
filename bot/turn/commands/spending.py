"""/usage: tokens in and out, the cached share and model calls, today and this month, by kind
(`bot.usage`); an owner in their private chat sees every chat's."""

from __future__ import annotations

from dataclasses import dataclass

from bot.models import Inbound
from bot.turn.access import AccessPolicy
from bot.turn.commands.handler import Progress
from bot.usage import UsageReport

NOT_RECORDED = "Model usage is not recorded."


@dataclass(eq=False)
class ShowUsage:
    names = ("usage",)
    slow = False

    report: UsageReport | None
    access: AccessPolicy

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        if self.report is None:
            return NOT_RECORDED
        everything = inbound.is_private and self.access.is_owner(inbound.user_id)
        return await self.report.describe(inbound.session_key, everything=everything)
