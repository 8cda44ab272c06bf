"""`Guard`: what every request meets before a page — the middlewares of the memory page.

headers     a strict Content-Security-Policy (scripts and styles from this server only, no
            inline script, no fetch), no framing, no referrer beyond the page; errors as a
            page that says what to do
hosts       a Host header other than the page's own address is refused (DNS rebinding)
signed      a session cookie that names a live session of someone still allowed, or the
            sign-in page (a write: refused)
same_origin a write (POST) must come from the page's own origin (its Origin header) and
            carry the session's form token (`signin.csrf_token`); the cookie is SameSite=Strict
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass

import structlog
from aiohttp import web
from aiohttp.typedefs import Middleware

from bot.web.signin import SignIns, csrf_token
from bot.web.site import SESSION, VIEWER, Site
from bot.web.viewer import People, viewer_of

log = structlog.get_logger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
COOKIE = "mnemo_session"
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # an Origin header on our own forms, none elsewhere
    "Cache-Control": "no-store",
}
ERRORS = {
    404: "No such page.",
    405: "Not here.",
    413: "That is more than the page takes (2 MB): nothing was saved.",
}
SIGNED_OUT = "You are signed out. Send /web to the bot in your private chat for a new link."
CROSS_SITE = "Refused: this form was not sent from the memory page itself."


class Refused(Exception):
    """A request the page will not serve: its status and what the person is told."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


@dataclass(eq=False)
class Guard:
    signins: SignIns
    people: People
    site: Site
    _: KW_ONLY
    origins: Callable[[], frozenset[str]]  # the page's own origins, once it listens

    @property
    def middlewares(self) -> list[Middleware]:
        return [self.headers, self.hosts, self.signed, self.same_origin]

    @web.middleware
    async def headers(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            response = await handler(request)
        except Refused as exc:
            response = self.site.render(request, "error.html", status=exc.status, text=exc.text)
        except web.HTTPException as exc:  # aiohttp's own: no such page, a body too large …
            if exc.status < 400:
                raise
            text = ERRORS.get(exc.status, f"That did not work ({exc.reason}).")
            response = self.site.render(request, "error.html", status=exc.status, text=text)
        response.headers.update(HEADERS)
        return response

    @web.middleware
    async def hosts(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if f"{request.scheme}://{request.host}" not in self.origins() and not self._proxied(
            request
        ):
            raise Refused(421, "This page answers only at its own address.")
        return await handler(request)

    def _proxied(self, request: web.Request) -> bool:
        """Behind a reverse proxy (`web.public_url`) the Host is the proxy's public name."""
        return any(origin.endswith(f"//{request.host}") for origin in self.origins())

    @web.middleware
    async def signed(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/static/") or request.path in ("/signin", "/signed-out"):
            return await handler(request)
        session = request.cookies.get(COOKIE, "")
        visitor = await self.signins.visitor(session) if session else None
        found = viewer_of(visitor, self.people) if visitor is not None else None
        if found is None:
            if request.method != "GET":
                raise Refused(403, SIGNED_OUT)
            return web.Response(status=303, headers={"Location": "/signin"})
        request[SESSION] = session
        request[VIEWER] = found
        return await handler(request)

    @web.middleware
    async def same_origin(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in ("GET", "HEAD"):
            return await handler(request)
        if request.headers.get("Origin") not in self.origins():
            log.info("web_cross_site_refused", path=request.path)
            raise Refused(403, CROSS_SITE)
        session = request.get(SESSION)
        if session is not None:
            form = await request.post()
            if form.get("csrf") != csrf_token(session):
                log.info("web_form_token_refused", path=request.path)
                raise Refused(403, CROSS_SITE)
        return await handler(request)
