"""The PTB `Bot` the channel speaks through, built once (`TelegramChannel.from_settings`): the
token, the Bot API's base URL (and its file URL), the proxy, the rate limiter
(`budget.AnswersFirst`).
`check_token` proves the token and base URL work (`python -m bot doctor`)."""

from __future__ import annotations

from telegram import Bot
from telegram.ext import ExtBot
from telegram.request import HTTPXRequest

from bot.channels.telegram.budget import AnswersFirst, Pace
from bot.storage.inbox import wire_hook


def telegram_bot(
    token: str,
    *,
    base_url: str,
    proxy: str | None = None,  # an http(s):// or socks5:// proxy for every request
    pace: Pace | None = None,  # webhooks: the send rate the replicas share
    polls: bool = True,  # False for webhooks: each request checked at the wire (replicas)
) -> ExtBot[int]:
    """The bot for one run of the channel, by long polling or by webhooks."""
    return ExtBot(
        token,
        base_url=base_url,
        base_file_url=file_url(base_url),
        rate_limiter=AnswersFirst(max_retries=3, pace=pace),
        request=request_via(proxy, wired=not polls),
        get_updates_request=request_via(proxy) if polls else None,
    )


async def check_token(token: str, base_url: str, proxy: str | None = None) -> str:
    """The bot's @username, proving the token and base URL (and proxy) work."""
    async with plain_bot(token, base_url, proxy) as bot:
        return f"@{bot.username}"


def plain_bot(token: str, base_url: str, proxy: str | None = None) -> Bot:
    """A bot for one question outside a run (no rate limiter): doctor's checks."""
    return Bot(
        token, base_url=base_url, base_file_url=file_url(base_url), request=request_via(proxy)
    )


def request_via(proxy: str | None, *, wired: bool = False) -> HTTPXRequest | None:
    """PTB's own HTTP client, through `proxy`; None (PTB's default) without one. `wired`: each
    request runs its turn's check at the wire (`bot.storage.inbox.wire_hook`, replicas)."""
    if wired:
        hooks = {"event_hooks": {"request": [wire_hook]}}
        return HTTPXRequest(proxy=proxy, httpx_kwargs=hooks)
    return HTTPXRequest(proxy=proxy) if proxy else None


def file_url(base_url: str) -> str:
    head, sep, _ = base_url.rstrip("/").rpartition("/bot")
    return f"{head}/file/bot" if sep else base_url
