"""`WebServer`: the memory page's HTTP server, a service of the app (started with it, stopped
with it), in the bot's own event loop — so every page calls the very objects a chat command
calls. It listens where `web.host` and `web.port` say (loopback unless told), serves the
sign-in pages itself and each page's routes (`bot.web.pages`).

Sign-in: `GET /signin?token=…` shows a button and uses nothing (a link preview fetching the
address signs nobody in); `POST /signin` redeems the token once (`SignIns.redeem`) and sets
the session cookie: HttpOnly, SameSite=Strict, Secure behind HTTPS. `POST /signout` ends it.
"""

from __future__ import annotations

from collections.abc import Iterable

import structlog
from aiohttp import web

from bot.errors import StartupError
from bot.settings import WebSettings
from bot.web.guard import COOKIE, Guard, Refused
from bot.web.signin import SignIns
from bot.web.site import SESSION, STATIC, Site
from bot.web.viewer import People

log = structlog.get_logger(__name__)
LINK_REFUSED = (
    "That sign-in link was used already or has expired. Send /web to the bot in your private "
    "chat for a new one."
)


class WebServer:
    def __init__(
        self,
        signins: SignIns,
        people: People,
        *,
        host: str,
        port: int,
        public_url: str | None,
        session_hours: int,
        site: Site | None = None,
    ) -> None:
        self.signins = signins
        self.site = site or Site()
        self.guard = Guard(signins, people, self.site, origins=self.origins)
        self.host = host
        self.port = port
        self.public_url = public_url.rstrip("/") if public_url else None
        self.session_hours = session_hours
        self.routes: list[web.RouteDef] = []
        self._runner: web.AppRunner | None = None

    @classmethod
    def from_settings(cls, config: WebSettings, signins: SignIns, people: People) -> WebServer:
        return cls(
            signins,
            people,
            host=config.host,
            port=config.port,
            public_url=config.public_url,
            session_hours=config.session_hours,
        )

    def add(self, routes: Iterable[web.RouteDef]) -> None:
        """A page's routes (before `start`)."""
        self.routes += routes

    @property
    def base_url(self) -> str:
        return page_address(public_url=self.public_url, host=self.host, port=self.port)

    def link(self, token: str) -> str:
        return sign_in_link(self.base_url, token)

    def origins(self) -> frozenset[str]:
        local = {f"http://{name}:{self.port}" for name in (_host(self.host), "localhost")}
        return frozenset({*local, *([self.public_url] if self.public_url else [])})

    async def start(self) -> None:
        app = web.Application(middlewares=self.guard.middlewares, client_max_size=2 * 1024**2)
        app.add_routes(
            [
                web.get("/", self._home),
                web.get("/signin", self._signin_page),
                web.post("/signin", self._signin),
                web.post("/signout", self._signout),
                web.get("/signed-out", self._signed_out),
                web.static("/static", STATIC),
                *self.routes,
            ]
        )
        self._runner = web.AppRunner(app, access_log=None)  # URLs carry link tokens: no log
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except OSError as exc:
            await self.stop()
            raise StartupError(
                f"the memory page cannot listen on {self.host}:{self.port} ({exc.strerror}): "
                "set BOT_WEB__PORT to a free port, or BOT_WEB__ENABLED=false"
            ) from exc
        self.port = int(self._runner.addresses[0][1])
        log.info("web_listening", url=self.base_url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ------------------------------------------------------------------ signing in and out

    async def _home(self, request: web.Request) -> web.Response:
        return web.Response(status=303, headers={"Location": "/memory"})

    async def _signin_page(self, request: web.Request) -> web.Response:
        token = request.query.get("token", "")
        return self.site.render(request, "signin.html", token=token)

    async def _signin(self, request: web.Request) -> web.Response:
        form = await request.post()
        token = str(form.get("token", ""))
        started = await self.signins.redeem(token) if token else None
        if started is None:
            raise Refused(403, LINK_REFUSED)
        response = web.Response(status=303, headers={"Location": "/memory"})
        response.set_cookie(
            COOKIE,
            started.session,
            httponly=True,
            samesite="Strict",
            secure=(self.public_url or "").startswith("https://"),
            path="/",
            max_age=self.session_hours * 3600,
        )
        return response

    async def _signout(self, request: web.Request) -> web.Response:
        await self.signins.end(request[SESSION])
        response = web.Response(status=303, headers={"Location": "/signed-out"})
        response.del_cookie(COOKIE, path="/")
        return response

    async def _signed_out(self, request: web.Request) -> web.Response:
        return self.site.render(request, "error.html", status=200, text="You are signed out.")


def page_address(*, public_url: str | None, host: str, port: int) -> str:
    """Where a person opens the page: the reverse proxy's address, or the one listened on."""
    return public_url.rstrip("/") if public_url else f"http://{_host(host)}:{port}"


def sign_in_link(base_url: str, token: str) -> str:
    """The one-time link `token` signs in by (`GET /signin` shows its button)."""
    return f"{base_url}/signin?token={token}"


def _host(host: str) -> str:
    """The host as it goes in an address (`[::1]` for IPv6)."""
    return f"[{host}]" if ":" in host else host
