"""Reminders: the viewer's reminders and tasks with their next time (an owner's: every chat's,
as /reminders in their private chat lists them), Cancel and Move — carried out by the same
`ReminderCommands` the chat's `/reminders cancel ID` and `/reminders move ID WHEN` call, as
from the viewer's private chat. A time that does not read keeps what was typed, and says why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from datetime import datetime

from aiohttp import web

from bot.models import Inbound, parse_session_key
from bot.reminders.commands import ReminderCommands, unreadable
from bot.reminders.store import ReminderStore, StoreError
from bot.reminders.when import FORMATS
from bot.web.pages.forms import field
from bot.web.site import Site, viewer
from bot.web.viewer import Viewer

DONE = ("Cancelled", "Moved", "There is no")


@dataclass(eq=False)
class RemindersPage:
    site: Site
    store: ReminderStore
    commands: ReminderCommands
    _: KW_ONLY
    now: Callable[[], datetime]

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/reminders", self.show),
            web.post("/reminders/cancel", self.cancel),
            web.post("/reminders/move", self.move),
        ]

    async def show(
        self, request: web.Request, *, status: int = 200, draft: tuple[str, str] = ("", "")
    ) -> web.Response:
        who = viewer(request)
        problem = ""
        try:
            found = [item for _, item in await self.store.everything() if who.sees_chat(item.chat)]
        except StoreError as exc:
            found, problem = [], unreadable(exc)
        found.sort(key=lambda item: (item.chat, item.next_at or self.now()))
        return self.site.render(
            request,
            "reminders.html",
            status=status,
            items=found,
            problem=problem,
            formats=FORMATS,
            draft=draft,
        )

    async def cancel(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        told = await self._command(viewer(request), f"cancel {field(form, 'id').strip()}")
        self.site.tell(request, told)
        return self.site.back(request, "/reminders")

    async def move(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        item_id, when = field(form, "id").strip(), " ".join(field(form, "when").split())
        told = await self._command(viewer(request), f"move {item_id} {when}")
        if not told.startswith(DONE):  # the time did not read: the form keeps it
            self.site.tell(request, told, kind="error")
            return await self.show(request, status=400, draft=(item_id, when))
        self.site.tell(request, told)
        return self.site.back(request, "/reminders")

    async def _command(self, who: Viewer, args: str) -> str:
        """`/reminders ARGS` as the viewer would send it in their private chat."""
        channel, chat_id, _ = parse_session_key(who.chat) or ("console", 0, None)
        inbound = Inbound(
            id="web:reminders",
            channel=channel,
            chat_id=chat_id,
            user_id=who.user,
            text=f"/reminders {args}",
            received_at=self.now(),
        )
        return await self.commands.reminders(inbound, args)
