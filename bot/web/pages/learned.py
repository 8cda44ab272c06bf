"""What I learned: the recent memory writes (the receipts, `bot.receipts`), each with Undo,
Forget and Edit as its buttons in the chat have — pressed through the same desk
(`ReceiptDesk.act`), which checks who may press as it does for a button."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from bot.receipts import ReceiptDesk
from bot.web.guard import Refused
from bot.web.pages.forms import field, local_path
from bot.web.site import Site, viewer

SHOWN = 100  # receipts on the page at most
ACTIONS = {"undo": "u", "forget": "f", "edit": "e", "keep": "k"}


@dataclass(eq=False)
class LearnedPage:
    site: Site
    desk: ReceiptDesk

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/learned", self.show), web.post("/learned/act", self.act)]

    async def show(self, request: web.Request) -> web.Response:
        who = viewer(request)
        receipts = [r for r in await self.desk.store.recent() if who.sees_chat(r.chat)]
        return self.site.render(request, "learned.html", receipts=receipts[:SHOWN])

    async def act(self, request: web.Request) -> web.StreamResponse:
        who = viewer(request)
        form = await request.post()
        action = ACTIONS.get(field(form, "action"))
        receipt = await self.desk.store.get(field(form, "receipt"))
        if action is None or receipt is None or not who.sees_chat(receipt.chat):
            raise Refused(404, "That receipt is gone, or not yours.")
        new = field(form, "text") if action == "e" else None
        if new is not None and not new.strip():
            raise Refused(400, "Give the new text for the fact (nothing was changed).")
        pressed = await self.desk.act(receipt.id, action, chat=receipt.chat, user=who.user, new=new)
        self.site.tell(request, pressed.text or pressed.notice)
        return self.site.back(request, local_path(field(form, "back"), "/learned"))
