"""`/web`: a one-time link to the memory page, for the person asking in their private chat
(`SignIns.link`: it works once, for `web.link_minutes`). In a group it says where to ask; with
the page off it says how to turn it on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass

from bot.models import Inbound
from bot.turn.commands.handler import Progress
from bot.web.signin import SignIns, Visitor

PRIVATE_ONLY = "Send /web to me in our private chat: the link I answer with signs you in."
OFF = "The memory page is off. An owner turns it on with BOT_WEB__ENABLED=true (docs/web.md)."


@dataclass(eq=False)
class WebCommand:
    names = ("web",)
    slow = False

    signins: SignIns | None
    link: Callable[[str], str]
    _: KW_ONLY
    link_minutes: int

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        if self.signins is None:
            return OFF
        if not inbound.is_private:
            return PRIVATE_ONLY
        token = await self.signins.link(Visitor(inbound.user_id, inbound.session_key))
        return (
            f"Your memory in a browser. This link signs you in once, within "
            f"{self.link_minutes} minutes; don't pass it on:\n{self.link(token)}"
        )
