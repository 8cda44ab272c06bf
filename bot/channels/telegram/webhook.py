"""Webhooks: Telegram POSTs each update to this replica (replicated mode, where any
replica may take any chat's update, `bot.replicas`).

An update is journaled and queued for its chat in one transaction (`Intake.receive`), and the
answer is 200 only after that commit; when it fails (the database is away) the answer is 500
and Telegram sends the update again later. Telegram sends a chat's next update only once the
previous one got its answer, so a chat's arrival order is kept. A delivery repeated is
recognised by its update id (the journal keeps answered ids a day). A request without the
secret token set with `setWebhook` is refused (403) before anything is read from it.

At start the replica sets the webhook (idempotent: every replica sets the same address, secret
and `max_connections`); at stop it leaves it set, the other replicas still serve it.
`GET /healthz` says whether this replica is up (200) or stopping (503). `webhook_info` is what
Telegram says of the webhook (`getWebhookInfo`, for `python -m bot doctor`).
"""

from __future__ import annotations

import asyncio
import hmac
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import structlog
from aiohttp import web
from telegram import Bot, Update
from telegram.error import TelegramError

from bot.channels.telegram.connect import plain_bot
from bot.channels.telegram.inbound import ALLOWED, to_inbound
from bot.settings import TelegramSettings
from bot.turn.intake import Intake

log = structlog.get_logger(__name__)
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


@dataclass(frozen=True)
class Hook:
    """Where Telegram posts (`url`: the balancer's public address; its path is served) and
    where this replica listens."""

    url: str
    secret: str
    host: str
    port: int
    max_connections: int = 40  # Telegram's connections at once, to the whole bot

    @classmethod
    def from_settings(cls, telegram: TelegramSettings) -> Hook:
        """Where Telegram posts to this replica (the settings made sure all of it is set)."""
        if telegram.webhook_url is None or telegram.webhook_secret is None:
            raise ValueError("webhook mode needs telegram.webhook_url and telegram.webhook_secret")
        return cls(
            url=telegram.webhook_url,
            secret=telegram.webhook_secret.get_secret_value(),
            host=telegram.webhook_host,
            port=telegram.webhook_port,
            max_connections=telegram.webhook_max_connections,
        )


@dataclass(frozen=True)
class HookState:
    """Telegram's account of the webhook (`getWebhookInfo`)."""

    url: str  # "" when none is set
    pending: int  # updates Telegram holds, not yet delivered
    last_error_at: float | None  # when its last delivery failed (seconds since the epoch)
    last_error: str | None  # and why, in Telegram's words


async def webhook_info(token: str, base_url: str, proxy: str | None = None) -> HookState:
    async with plain_bot(token, base_url, proxy) as bot:
        info = await bot.get_webhook_info()
    when = info.last_error_date
    return HookState(
        url=info.url or "",
        pending=info.pending_update_count,
        last_error_at=None if when is None else when.timestamp(),
        last_error=info.last_error_message,
    )


async def serve(
    bot: Bot, intake: Intake, hook: Hook, stop: asyncio.Event, *, serving: asyncio.Event
) -> None:
    """Serve `hook` and set the webhook (`serving` set then) until `stop` is set; no update
    is taken after (Telegram sends it again, to another replica)."""
    server = web.AppRunner(Webhook(bot, intake, hook).app(stop), access_log=None)
    await server.setup()
    try:
        await web.TCPSite(server, hook.host, hook.port).start()
        await bot.set_webhook(
            hook.url,
            secret_token=hook.secret,
            max_connections=hook.max_connections,
            allowed_updates=ALLOWED,
        )
        started_cpu = round(time.process_time(), 2)  # the start's CPU (benchmarks read it)
        log.info("telegram_webhook_started", bot=bot.username, port=hook.port, cpu_s=started_cpu)
        serving.set()
        await stop.wait()
    finally:
        await server.cleanup()


@dataclass(eq=False)
class Webhook:
    """The replica's web server: Telegram's posts at the hook's path, `GET /healthz`."""

    bot: Bot
    intake: Intake
    hook: Hook

    def app(self, stop: asyncio.Event) -> web.Application:
        async def healthz(_request: web.Request) -> web.Response:
            return web.Response(status=503 if stop.is_set() else 200, text="ok\n")

        app = web.Application()
        app.router.add_post(urlsplit(self.hook.url).path or "/", self._update)
        app.router.add_get("/healthz", healthz)
        return app

    async def _update(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.hook.secret.encode()):
            log.warning("telegram_webhook_refused", reason="secret token")
            return web.Response(status=403)
        try:
            raw: Any = await request.json()
            update = Update.de_json(raw, self.bot)
        except (ValueError, TypeError, KeyError, TelegramError):
            log.warning("telegram_webhook_unreadable")
            return web.Response(status=200)  # sent again it would be as unreadable
        inbound = to_inbound(update, bot_username=self.bot.username)
        if inbound is None:
            return web.Response(status=200)
        try:
            await self.intake.receive([inbound])
        except Exception as exc:  # not journaled (the database is away): Telegram retries
            log.warning("telegram_webhook_not_journaled", error=type(exc).__name__)
            return web.Response(status=500)
        return web.Response(status=200)
