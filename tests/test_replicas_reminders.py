"""Reminders with replicas (skipped without `MNEMO_TEST_PG`): two replicas sharing a workspace
folder and a database; one of them runs the reminders (`bot.replicas.once`), the reminder is
sent once, and when that replica stops the other one takes the reminders over. And with a
folder each: a reminder one replica keeps (in the database) is fired by the other."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import SecretStr

from bot.app import App
from bot.models import GLOBAL_SCOPE
from bot.reminders.scheduler import Scheduler
from bot.replicas.once import OnceInCluster
from bot.settings import StoreSettings
from tests.clock import Clock
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, running_bot
from tests.reminding import a_reminder, reminder_settings, schedule

START = datetime(2026, 10, 20, 8, 0, tzinfo=UTC)


def scheduler_of(app: App) -> tuple[OnceInCluster, Scheduler]:
    [once] = [s for s in app.services if isinstance(s, OnceInCluster)]
    [scheduler] = [s for name, s in once.work if name == "reminders"]
    assert isinstance(scheduler, Scheduler)
    return once, scheduler


async def until(check: Callable[[], bool], within: float = 10.0) -> None:
    for _ in range(int(within / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("not within the bound")


async def test_a_reminder_fires_once_from_the_replica_that_runs_them_then_from_the_other(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai)
    settings = settings.model_copy(update={"store": StoreSettings(url=SecretStr(pg_url))})
    clock = Clock(START)

    def sent(text: str) -> list[str]:
        return [m.text for m in fake_telegram.sent_messages(OWNER) if text in m.text]

    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(running_bot(settings, fake_telegram, now=clock))
        once_a, scheduler_a = scheduler_of(first)
        await until(lambda: "reminders" in once_a.running())
        second = await stack.enter_async_context(running_bot(settings, fake_telegram, now=clock))
        once_b, scheduler_b = scheduler_of(second)

        schedule(fake_openai, text="water the plants", when="in 20 minutes")
        schedule(fake_openai, text="call the bank", when="in 40 minutes")
        fake_telegram.push_text(OWNER, OWNER, "in 20 minutes remind me to water the plants")
        fake_telegram.push_text(OWNER, OWNER, "and in 40 to call the bank")
        await fake_telegram.wait_for_messages(OWNER, 2)
        clock.at = START + timedelta(minutes=21)
        scheduler_a.wake()
        scheduler_b.wake()  # not running on the second replica: nothing happens there
        await until(lambda: bool(sent("water the plants")))
        await asyncio.sleep(1.0)  # a second sending would come now
        watered = sent("water the plants")
        ran_on_second = once_b.running()

        await once_a.stop()  # the first replica lets go of its background work
        await until(lambda: "reminders" in once_b.running())
        clock.at = START + timedelta(minutes=41)
        scheduler_b.wake()
        await until(lambda: bool(sent("call the bank")))

    assert len(watered) == 1 and "reminders" not in ran_on_second
    assert len(sent("call the bank")) == 1


async def test_a_reminder_one_replica_keeps_is_listed_and_fired_by_the_other(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    settings = reminder_settings(tmp_path / "a", fake_telegram, fake_openai)
    settings = settings.model_copy(update={"store": StoreSettings(url=SecretStr(pg_url))})
    other = settings.model_copy(update={"workspace": tmp_path / "b"})  # a folder of its own
    clock = Clock(START)
    item = a_reminder(START, item_id="r1a2b3c")

    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(running_bot(settings, fake_telegram, now=clock))
        once, runs_them = scheduler_of(first)
        await until(lambda: "reminders" in once.running())
        second = await stack.enter_async_context(running_bot(other, fake_telegram, now=clock))
        _, keeps_it = scheduler_of(second)
        await keeps_it.store.add(GLOBAL_SCOPE, item)  # as the second's /remind would
        listed = [found.id for _, found in await runs_them.store.everything()]
        clock.at = START + timedelta(minutes=21)
        runs_them.wake()
        sent = fake_telegram.sent_messages
        await until(lambda: any("water the plants" in m.text for m in sent(OWNER)))
        after = await keeps_it.store.items(GLOBAL_SCOPE)

    assert listed == ["r1a2b3c"]
    assert after == []  # fired, so removed: the replica that keeps it reads that
    assert not (tmp_path / "b" / "memory" / "reminders.jsonl").exists()  # in the database
