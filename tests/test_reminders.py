"""Reminders end to end on the fake Bot API and model, with a settable clock: the right local
time across a DST change, once each; a group's in the group; late and "only on time"; the prompt
knows them; the commands."""

from __future__ import annotations

import asyncio
import io
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.app import build_app
from bot.channels.console import ConsoleChannel
from bot.reminders.scheduler import Scheduler
from bot.settings import ReminderSettings
from tests.clock import Clock
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import API_KEY, FRIEND, OWNER, make_settings
from tests.reminding import bot_at, reminder_settings, schedule, tool_answers
from tests.talk import say, system_text

GROUP = -100555


def utc(year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


async def test_one_off_recurring_and_relative_arrive_at_local_time_across_dst_once_each(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    # Lisbon: UTC+1 until 2026-10-25 02:00 local, UTC+0 after
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai)
    async with bot_at(settings, fake_telegram, utc(2026, 10, 24, 7, 0)) as bot:
        fake_telegram.push_text(OWNER, OWNER, "/timezone Europe/Lisbon")
        await fake_telegram.wait_for_messages(OWNER, 1)
        schedule(fake_openai, text="water the plants", when="0 9 * * *")
        fake_telegram.push_text(OWNER, OWNER, "every day at 9 remind me to water the plants")
        await fake_telegram.wait_for_messages(OWNER, 2)
        schedule(fake_openai, text="call the bank", when="2026-10-25 09:30")
        fake_telegram.push_text(OWNER, OWNER, "on Sunday at 9:30 remind me to call the bank")
        await fake_telegram.wait_for_messages(OWNER, 3)

        assert await bot.at(utc(2026, 10, 24, 7, 59)) == 0
        assert await bot.at(utc(2026, 10, 24, 8, 0)) == 1  # 09:00 summer time
        await bot.settled()
        bot.clock.at = utc(2026, 10, 25, 0, 50)  # 01:50 summer time, 70 minutes before 01:00 again
        schedule(fake_openai, text="take the tea out", when="in 20 minutes")
        fake_telegram.push_text(OWNER, OWNER, "remind me in 20 minutes to take the tea out")
        await fake_telegram.wait_for_messages(OWNER, 5)
        assert await bot.at(utc(2026, 10, 25, 1, 9)) == 0
        assert await bot.at(utc(2026, 10, 25, 1, 10)) == 1  # 01:10 winter time
        assert await bot.at(utc(2026, 10, 25, 8, 0)) == 0  # 09:00 would be 08:00 UTC in summer
        assert await bot.at(utc(2026, 10, 25, 9, 0)) == 1  # 09:00 winter time
        assert await bot.at(utc(2026, 10, 25, 9, 30)) == 1
        assert await bot.at(utc(2026, 10, 25, 9, 31)) == 0
        await bot.settled()
        texts = bot.texts(OWNER)

    answers = tool_answers(fake_openai)
    assert any("Sun 2026-10-25 09:30 (Europe/Lisbon)" in a for a in answers), answers
    assert any("Sat 2026-10-24 09:00 (Europe/Lisbon)" in a for a in answers), answers
    assert any("Sun 2026-10-25 01:10 (Europe/Lisbon)" in a for a in answers), answers
    assert texts.count("⏰ water the plants") == 2
    assert texts.count("⏰ call the bank") == 1
    assert texts.count("⏰ take the tea out") == 1


async def test_a_group_reminder_lands_in_the_group_replying_to_the_message_that_asked(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai)
    async with bot_at(settings, fake_telegram, utc(2026, 11, 27, 10, 0)) as bot:
        schedule(fake_openai, text="stand-up", when="in 5 minutes")
        update = fake_telegram.push_text(
            GROUP, FRIEND, "@mnemo_test_bot remind us in 5 minutes: stand-up", chat_type="group"
        )
        await fake_telegram.wait_for_messages(GROUP, 1)
        assert await bot.at(utc(2026, 11, 27, 10, 5)) == 1
        await bot.settled()

    [asked] = [u for u in fake_telegram.pushed_updates if u["update_id"] == update]
    reminder = [m for m in fake_telegram.sent_messages(GROUP) if m.text == "⏰ stand-up"]
    assert [m.reply_to_message_id for m in reminder] == [asked["message"]["message_id"]]
    assert [m.text for m in fake_telegram.sent_messages(FRIEND)] == []
    assert [m.text for m in fake_telegram.sent_messages(OWNER)] == []


async def test_one_missed_while_down_comes_marked_late_and_an_on_time_one_is_dropped(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai)
    async with bot_at(settings, fake_telegram, utc(2026, 11, 27, 8, 0)):
        schedule(fake_openai, text="call the bank", when="09:00")
        fake_telegram.push_text(OWNER, OWNER, "at 9 remind me to call the bank")
        await fake_telegram.wait_for_messages(OWNER, 1)
        schedule(fake_openai, text="join the call", when="09:00", on_time_only=True)
        fake_telegram.push_text(OWNER, OWNER, "at 9, but only if on time: join the call")
        await fake_telegram.wait_for_messages(OWNER, 2)
    # the bot is down from 08:00 to 11:00
    async with bot_at(settings, fake_telegram, utc(2026, 11, 27, 11, 0)) as bot:
        await bot.at(utc(2026, 11, 27, 11, 0))  # if the start's own look did not yet
        await bot.settled()
        assert await bot.at(utc(2026, 11, 27, 11, 1)) == 0
        texts = bot.texts(OWNER)[2:]
        fake_telegram.push_text(OWNER, OWNER, "/reminders")
        listed = await fake_telegram.wait_for_messages(OWNER, 4)

    assert texts == ["⏰ call the bank\n(this was due at 09:00 on Fri 27 Nov)"]
    assert "No reminders here" in listed[-1].text  # both done: the late one sent, one dropped


async def test_the_prompt_knows_the_chats_next_reminders_and_commands_list_move_cancel(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai)
    async with bot_at(settings, fake_telegram, utc(2026, 11, 27, 8, 0)) as bot:
        schedule(fake_openai, text="call the bank", when="2026-11-30 09:00")
        fake_telegram.push_text(OWNER, OWNER, "Monday at 9: call the bank")
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_openai.script(Reply("You asked me to remind you to call the bank."))
        fake_telegram.push_text(OWNER, OWNER, "what did I ask you to remind me of?")
        await fake_telegram.wait_for_messages(OWNER, 2)
        prompt = system_text(fake_openai.last_request)
        [line] = (tmp_path / "ws/memory/reminders.jsonl").read_text().splitlines()
        item = json.loads(line)
        for n, command in enumerate(
            [
                "/reminders",
                f"/reminders move {item['id']} 2026-11-30 10:00",
                "/reminders",
                f"/reminders cancel {item['id']}",
                "/reminders",
                "/reminders cancel nope",
            ],
            start=3,
        ):
            fake_telegram.push_text(OWNER, OWNER, command)
            await fake_telegram.wait_for_messages(OWNER, n)
        answers = bot.texts(OWNER)[2:]

    assert "call the bank" in prompt and "Mon 2026-11-30 09:00 (UTC)" in prompt
    assert "Mon 2026-11-30 09:00 (UTC)" in answers[0]
    assert "Mon 2026-11-30 10:00 (UTC)" in answers[1]
    assert "10:00" in answers[2]
    assert answers[3] == "Cancelled: call the bank"
    assert "No reminders here" in answers[4]
    assert "There is no reminder nope here" in answers[5]


async def test_forget_reaches_a_reminder_and_undo_brings_it_back(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai)
    async with bot_at(settings, fake_telegram, utc(2026, 11, 27, 8, 0)) as bot:
        schedule(fake_openai, text="call the bank about the loan", when="09:00")
        fake_telegram.push_text(OWNER, OWNER, "at 9 remind me to call the bank about the loan")
        await fake_telegram.wait_for_messages(OWNER, 1)
        for n, command in enumerate(["/forget the loan", "/reminders", "/undo"], start=2):
            fake_telegram.push_text(OWNER, OWNER, command)
            await fake_telegram.wait_for_messages(OWNER, n)
        assert await bot.at(utc(2026, 11, 27, 9, 0)) == 1
        await bot.settled()
        texts = bot.texts(OWNER)

    assert "reminders 1" in texts[1].split("\n")[0]  # the count per place names the reminders
    assert "No reminders here" in texts[2]
    assert texts[-1] == "⏰ call the bank about the loan"


async def test_a_reminder_made_at_the_console_is_shown_there(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        tmp_path / "ws",
        telegram=None,
        openai=fake_openai,
        reminders=ReminderSettings(poll_seconds=3600),
    )
    clock = Clock(utc(2026, 11, 27, 8, 0))
    app = build_app(settings, api_key=API_KEY, now=clock)
    [scheduler] = [s for s in app.services if isinstance(s, Scheduler)]
    await app.start()
    schedule(fake_openai, text="stretch", when="in 10 minutes")
    read_end, write_end = os.pipe()
    stdout = io.StringIO()
    try:
        with os.fdopen(read_end, "r") as stdin:
            console = ConsoleChannel(app.router, now=clock, stdin=stdin, stdout=stdout)
            running = asyncio.create_task(console.run())
            os.write(write_end, b"remind me in 10 minutes to stretch\n")
            for _ in range(200):
                if "Done." in stdout.getvalue():
                    break
                await asyncio.sleep(0.02)
            clock.at = utc(2026, 11, 27, 8, 10)
            assert await scheduler.tick() == 1
            for _ in range(200):
                if "stretch" in stdout.getvalue().rpartition("Done.")[2]:
                    break
                await asyncio.sleep(0.02)
            os.close(write_end)
            await asyncio.wait_for(running, timeout=5)
    finally:
        await app.aclose()

    assert "mnemo> ⏰ stretch" in stdout.getvalue()


async def test_short_relative_reminders_keep_their_second(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai)
    asked = datetime(2026, 11, 27, 21, 36, 54, tzinfo=UTC)
    async with bot_at(settings, fake_telegram, asked) as bot:
        schedule(fake_openai, text="check the oven", when="in 1 minute")
        fake_telegram.push_text(OWNER, OWNER, "remind me in 1 minute to check the oven")
        await fake_telegram.wait_for_messages(OWNER, 1)
        bot.clock.at = asked + timedelta(seconds=20)
        schedule(fake_openai, text="turn it off", when="in 2 minutes")
        fake_telegram.push_text(OWNER, OWNER, "and in 2 minutes to turn it off")
        await fake_telegram.wait_for_messages(OWNER, 2)
        stored = sorted(item["next_at"] for item in reminder_lines(settings.workspace))

        assert await bot.at(asked + timedelta(seconds=59)) == 0  # not at 21:37:00
        assert await bot.at(asked + timedelta(seconds=60)) == 1
        assert await bot.at(asked + timedelta(seconds=139)) == 0  # not at 21:39:00
        assert await bot.at(asked + timedelta(seconds=140)) == 1
        await bot.settled()
        texts = bot.texts(OWNER)

    assert stored == ["2026-11-27T21:37:54+00:00", "2026-11-27T21:39:14+00:00"]
    assert texts[-2:] == ["⏰ check the oven", "⏰ turn it off"]


async def test_in_one_minute_counts_from_the_message_not_from_a_slow_model(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        tmp_path / "ws", telegram=None, openai=fake_openai, reminders=ReminderSettings()
    )
    asked = datetime(2026, 11, 27, 21, 36, 54, tzinfo=UTC)
    clock = Clock(asked + timedelta(seconds=30))  # the model took 30 s to call the tool
    app = build_app(settings, api_key=API_KEY, now=clock)
    schedule(fake_openai, text="check the oven", when="in 1 minute")
    try:
        await say(app, "remind me in 1 minute to check the oven", at=asked)
    finally:
        await app.aclose()

    [item] = reminder_lines(settings.workspace)
    assert item["next_at"] == "2026-11-27T21:37:54+00:00"


def reminder_lines(workspace: Path) -> list[dict[str, Any]]:
    """The owner's reminders file, an item a line."""
    path = workspace / "memory" / "reminders.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
