"""Health: what `python -m bot doctor` checks (`bot.cli.doctor.findings`: the workspace,
Telegram, the owners, the model, transcription, vision, the embedder …), run when an owner asks
(the model check asks the model a short question, so it costs a few tokens) and shown line by
line as doctor prints them, secrets scrubbed. Owners only: it tells the bot's configuration."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from aiohttp import web

from bot.web.checks import Checks
from bot.web.guard import Refused
from bot.web.site import Site, viewer

OWNERS_ONLY = "Only an owner sees the bot's health checks."


class HealthPage:
    def __init__(self, site: Site, checks: Checks | None, *, now: Callable[[], datetime]) -> None:
        self.site = site
        self.checks = checks
        self.now = now
        self.last: tuple[str, list[tuple[str, str, str]]] | None = None  # when, the findings

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/health", self.show), web.post("/health/run", self.run)]

    async def show(self, request: web.Request) -> web.Response:
        if not viewer(request).owner:
            raise Refused(403, OWNERS_ONLY)
        return self.site.render(
            request, "health.html", last=self.last, available=self.checks is not None
        )

    async def run(self, request: web.Request) -> web.StreamResponse:
        if not viewer(request).owner:
            raise Refused(403, OWNERS_ONLY)
        if self.checks is not None:
            found = [(name, f.level, f.text) async for name, f in self.checks()]
            self.last = (f"{self.now():%Y-%m-%d %H:%M:%S}", found)
        return self.site.back(request, "/health")
