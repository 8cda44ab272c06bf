"""The Telegram channel, as `settings.telegram.mode` says: long polling (one process), or
webhooks served by each replica (replicated mode: its server, aiohttp, is in the `replicas`
extra, imported only then)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.channels.telegram import Showing, TelegramChannel
from bot.channels.telegram.budget import Pace
from bot.settings import Settings, TelegramSettings
from bot.storage.heartbeat import Heartbeat
from bot.storage.workspace import Workspace
from bot.turn.intake import IntakeFactory
from bot.turn.router import Router
from bot.usage import OwnerLine

if TYPE_CHECKING:
    from bot.channels.telegram.webhook import Hook


def telegram_channel(
    settings: Settings,
    router: Router,
    workspace: Workspace,
    intake: IntakeFactory,
    *,
    token: str,
    heartbeat: Heartbeat | None = None,
    owner_line: OwnerLine | None = None,  # caps on spending tell the owners through it
    pace: Pace | None = None,  # webhooks: the send rate the replicas share
) -> TelegramChannel:
    telegram = settings.telegram
    options: dict[str, Any] = {
        "token": token,
        "base_url": telegram.base_url,
        "poll_timeout": telegram.poll_timeout,
        "typing_interval": telegram.typing_interval,
        "state_path": workspace.channel_state_path("telegram"),
        "shutdown_grace": telegram.shutdown_grace,
        "showing": Showing(telegram.stream, telegram.stream_interval, telegram.reaction),
        "heartbeat": heartbeat,
        "proxy": telegram.proxy,
        "debounce": telegram.debounce,
        "owner_line": owner_line,
    }
    if telegram.mode == "webhook":
        from bot.channels.telegram.webhook import TelegramWebhook

        hook = webhook_hook(telegram)
        channel: TelegramChannel = TelegramWebhook(router, hook=hook, pace=pace, **options)
    else:
        channel = TelegramChannel(router, **options)
    channel.intake = intake
    return channel


def webhook_hook(telegram: TelegramSettings) -> Hook:
    """Where Telegram posts to this replica (the settings made sure all of it is set)."""
    from bot.channels.telegram.webhook import Hook

    if telegram.webhook_url is None or telegram.webhook_secret is None:
        raise ValueError("webhook mode needs telegram.webhook_url and telegram.webhook_secret")
    return Hook(
        url=telegram.webhook_url,
        secret=telegram.webhook_secret.get_secret_value(),
        host=telegram.webhook_host,
        port=telegram.webhook_port,
        max_connections=telegram.webhook_max_connections,
    )
