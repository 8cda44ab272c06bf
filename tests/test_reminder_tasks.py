"""Scheduled tasks that think, on the fake Bot API and model with a settable clock: one with
nothing to report sends nothing and is never stored as something the user said; one with news
sends it; a runaway one stops at its token cap and the owner hears one line."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.reminders.tasks import NOTHING
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import Fail, FakeOpenAI, Reply, ToolCalls
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import FRIEND, OWNER
from tests.reminding import bot_at, reminder_settings, schedule

GROUP = -100556
TASK = "summarise what I told you this week"


def utc(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def offered(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or []}


async def test_a_task_with_nothing_new_sends_nothing_and_is_not_stored_as_user_input(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = reminder_settings(workspace, fake_telegram, fake_openai)
    async with bot_at(settings, fake_telegram, utc(27, 8)) as bot:
        schedule(fake_openai, text=TASK, when="0 9 * * *", task=True)
        fake_telegram.push_text(OWNER, OWNER, "every day at 9 summarise my week")
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_openai.script(ToolCalls([(NOTHING, {})]), Reply("Nothing new today."))
        asked = len(fake_openai.requests)
        assert await bot.at(utc(27, 9)) == 1
        await bot.settled()
        fake_openai.script(Reply("This week you told me about the bank."))
        assert await bot.at(utc(28, 9)) == 1
        await bot.settled()
        texts = bot.texts(OWNER)

    task_request = fake_openai.requests[asked]
    assert TASK in str(task_request["messages"][-1]["content"])
    assert "remind" not in offered(task_request) and NOTHING in offered(task_request)
    assert texts == ["Done.", "This week you told me about the bank."]
    session = Workspace(workspace).session_path(f"telegram:{OWNER}").read_text()
    assert TASK in session  # the tool call that scheduled it, nothing more
    assert "A scheduled task" not in session and "Nothing new today" not in session
    assert "This week you told me" not in session


async def test_a_runaway_task_stops_at_its_cap_and_the_owner_hears_one_line(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai, task_tokens=300)
    async with bot_at(settings, fake_telegram, utc(27, 8)) as bot:
        schedule(fake_openai, text="check the news again and again", when="*/10 * * * *", task=True)
        fake_telegram.push_text(
            GROUP, FRIEND, "@mnemo_test_bot every 10 minutes check the news", chat_type="group"
        )
        await fake_telegram.wait_for_messages(GROUP, 1)
        fake_openai.answer_all(lambda _: ToolCalls([("current_time", {})], prompt_tokens=200))
        asked = len(fake_openai.requests)
        assert await bot.at(utc(27, 8, 10)) == 1
        await bot.settled()
        first_run = len(fake_openai.requests) - asked
        assert await bot.at(utc(27, 8, 20)) == 1
        await bot.settled()

    assert first_run == 2  # the third call would pass the cap of 300 tokens
    assert [m.text for m in fake_telegram.sent_messages(GROUP) if not m.deleted] == ["Done."]
    [line] = [m.text for m in fake_telegram.sent_messages(OWNER)]
    assert line.startswith("A scheduled task stopped at its token cap: check the news")


async def test_a_task_whose_model_fails_sends_nothing_to_the_chat(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai)
    async with bot_at(settings, fake_telegram, utc(27, 8)) as bot:
        schedule(fake_openai, text=TASK, when="09:00", task=True)
        fake_telegram.push_text(OWNER, OWNER, "at 9 summarise my week")
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_openai.script(Fail(503, "The server is overloaded."))
        assert await bot.at(utc(27, 9)) == 1
        await bot.settled()
        texts = bot.texts(OWNER)

    assert texts == ["Done."]


async def test_past_the_daily_cap_a_task_does_not_call_the_model_and_the_owner_hears_once(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = reminder_settings(tmp_path / "ws", fake_telegram, fake_openai, daily_task_tokens=0)
    async with bot_at(settings, fake_telegram, utc(27, 8)) as bot:
        schedule(fake_openai, text=TASK, when="*/30 * * * *", task=True)
        fake_telegram.push_text(OWNER, OWNER, "every half hour summarise my week")
        await fake_telegram.wait_for_messages(OWNER, 1)
        asked = len(fake_openai.requests)
        assert await bot.at(utc(27, 8, 30)) == 1
        await bot.settled()
        assert await bot.at(utc(27, 9, 0)) == 1
        await bot.settled()
        texts = bot.texts(OWNER)

    assert len(fake_openai.requests) == asked
    assert texts[0] == "Done."
    assert [t.split(":")[0] for t in texts[1:]] == [
        "A scheduled task stopped at the daily token cap"
    ]
