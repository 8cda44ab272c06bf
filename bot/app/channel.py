"""The Telegram channel, as `settings.telegram.mode` says: long polling (one process), or
webhooks served by each replica (replicated mode: its server, aiohttp, is in the `replicas`
extra, imported only then). The PTB `Bot` is built here, once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.channels.telegram import Showing, TelegramChannel, telegram_bot
from bot.channels.telegram.budget import Pace
from bot.settings import TelegramSettings
from bot.storage.heartbeat import Heartbeat
from bot.storage.workspace import Workspace
from bot.turn.intake import IntakeFactory
from bot.turn.router import Router
from bot.usage import OwnerLine

if TYPE_CHECKING:
    from bot.channels.telegram.webhook import Hook


@dataclass(frozen=True)
class Telegram:
    """The channel and how it takes updates: `run` polls, or serves the webhook."""

    channel: TelegramChannel
    settings: TelegramSettings
    workspace: Workspace
    hook: Hook | None  # webhook mode: where Telegram posts

    @property
    def serving(self) -> asyncio.Event:
        return self.channel.serving

    async def run(self, stop: asyncio.Event) -> None:
        grace = self.settings.shutdown_grace
        if self.hook is not None:
            await self.channel.run_webhook(stop, self.hook, grace=grace)
            return
        offset = self.workspace.channel_state_path("telegram")
        wait = self.settings.poll_timeout
        await self.channel.run_polling(stop, offset_path=offset, poll_timeout=wait, grace=grace)


def telegram_channel(
    telegram: TelegramSettings,
    router: Router,
    workspace: Workspace,
    intake: IntakeFactory,
    *,
    token: str,
    heartbeat: Heartbeat | None = None,
    owner_line: OwnerLine | None = None,  # caps on spending tell the owners through it
    pace: Pace | None = None,  # webhooks: the send rate the replicas share
) -> Telegram:
    webhook = telegram.mode == "webhook"
    bot = telegram_bot(
        token,
        base_url=telegram.base_url,
        proxy=telegram.proxy,
        pace=pace if webhook else None,
        polls=not webhook,
    )
    showing = Showing(
        stream=telegram.stream,
        interval=telegram.stream_interval,
        reaction=telegram.reaction,
        typing=telegram.typing_interval,
    )
    channel = TelegramChannel(
        bot,
        router,
        intake=intake,
        showing=showing,
        debounce=telegram.debounce,
        heartbeat=heartbeat,
        owner_line=owner_line,
    )
    return Telegram(channel, telegram, workspace, webhook_hook(telegram) if webhook else None)


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
