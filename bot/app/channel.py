"""The Telegram channel, as `settings.telegram.mode` says: long polling (one process), or
webhooks served by each replica (replicated mode: its server, aiohttp, is in the `replicas`
extra, imported only then). Its PTB `Bot` is built once, by `TelegramChannel.from_settings`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.channels.telegram import TelegramChannel
from bot.settings import TelegramSettings
from bot.storage.workspace import Workspace

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


def webhook_hook(telegram: TelegramSettings) -> Hook | None:
    """Where Telegram posts to this replica in webhook mode (None: polling)."""
    if telegram.mode != "webhook":
        return None
    from bot.channels.telegram.webhook import Hook  # only now: see the module's docstring

    return Hook.from_settings(telegram)
