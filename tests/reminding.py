"""Helpers for the reminder tests: the bot on the fake Telegram with a settable clock, and
asking the model (scripted) to schedule."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from bot.app import App, build_app, build_telegram
from bot.reminders.model import Reminder
from bot.reminders.scheduler import Scheduler
from bot.reminders.when import read_when
from bot.settings import ReminderSettings, Settings
from tests.clock import Clock
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import API_KEY, OWNER, make_settings


def a_reminder(
    at: datetime,
    *,
    item_id: str = "r1",
    chat_id: int = OWNER,
    when: str = "in 20 minutes",
    zone: str = "UTC",
    text: str = "water the plants",
) -> Reminder:
    """A reminder the owner made at `at` in a Telegram chat (a group when `chat_id` < 0), due
    `when` says."""
    return Reminder(
        id=item_id,
        chat=f"telegram:{chat_id}",
        channel="telegram",
        chat_id=chat_id,
        chat_type="group" if chat_id < 0 else "private",
        user_id=OWNER,
        zone=zone,
        text=text,
        rule=read_when(when, at, ZoneInfo(zone)),
        next_at=None,
        created_at=at,
    ).advanced(at)


@dataclass
class Running:
    app: App
    clock: Clock
    scheduler: Scheduler
    telegram: FakeTelegram

    async def at(self, moment: datetime) -> int:
        """Move the clock to `moment` and let the scheduler look; how many it journaled."""
        self.clock.at = moment
        fired = await self.scheduler.tick()
        await asyncio.sleep(0)
        return fired

    async def settled(self) -> None:
        """Wait until the journal is empty (everything queued was delivered)."""
        for _ in range(400):
            if not await self.app.router.inbox.pending():
                return
            await asyncio.sleep(0.025)
        raise TimeoutError("entries still in the journal")

    def texts(self, chat: int) -> list[str]:
        return [m.text for m in self.telegram.sent_messages(chat) if not m.deleted]


def reminder_settings(
    workspace: Any, telegram: FakeTelegram, openai: FakeOpenAI, **caps: Any
) -> Settings:
    """Settings whose scheduler looks only when a test says (`Running.at`)."""
    return make_settings(
        workspace,
        telegram=telegram,
        openai=openai,
        reminders=ReminderSettings(poll_seconds=3600, **caps),
    )


@asynccontextmanager
async def bot_at(
    settings: Settings, telegram: FakeTelegram, start: datetime
) -> AsyncIterator[Running]:
    clock = Clock(start)
    app = build_app(settings, api_key=API_KEY, now=clock)
    [scheduler] = [s for s in app.services if isinstance(s, Scheduler)]
    channel = build_telegram(app, settings, token=telegram.token)
    await app.start()
    stop = asyncio.Event()
    task = asyncio.create_task(channel.run(stop))
    try:
        await telegram.wait_for_poll()
        for _ in range(500):  # until the channel took its journal's entries
            if "telegram" in app.router.outlets:
                break
            await asyncio.sleep(0.01)
        yield Running(app, clock, scheduler, telegram)
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=10)
        await app.aclose()


def schedule(openai: FakeOpenAI, reply: str = "Done.", **args: Any) -> None:
    """The model's next answer: one `remind` call with `args` (action "add" unless given)."""
    openai.script(ToolCalls([("remind", {"action": "add", **args})]), Reply(reply))


def tool_answers(openai: FakeOpenAI) -> list[str]:
    """What the tools answered, across every request the model got."""
    found: list[str] = []
    for request in openai.requests:
        for message in request.get("messages", []):
            if message.get("role") == "tool" and message["content"] not in found:
                found.append(message["content"])
    return found
