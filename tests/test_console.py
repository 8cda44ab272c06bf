"""The console channel: lines in, `mnemo>` replies out, commands, replay, and the end at EOF."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

from bot.app import App
from bot.channels.console import ConsoleChannel
from bot.models import Inbound
from bot.storage.inbox import Inbox
from tests.fakes.openai_api import FakeOpenAI, Reply


async def chat(app: App, lines: str) -> str:
    """Feed `lines` to the console until end of input; what it printed."""
    stdout = io.StringIO()
    console = ConsoleChannel(app.runner, now=app.now, stdin=io.StringIO(lines), stdout=stdout)
    await asyncio.wait_for(console.run(), timeout=5)
    return stdout.getvalue()


async def test_each_line_is_a_turn_and_the_reply_is_printed(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Hi there!"), Reply("Fine, thanks."))

    out = await chat(app, "hello\n\nhow are you?\n")

    assert "mnemo> Hi there!\n" in out
    assert out.index("mnemo> Hi there!") < out.index("mnemo> Fine, thanks.")
    assert out.count("you> ") == 4  # three lines (one blank) and the end of input
    assert [r["messages"][-1]["content"] for r in fake_openai.requests] == ["hello", "how are you?"]
    session = json.loads((workspace / "sessions" / "console%3A0.json").read_text())
    assert [m["content"] for m in session["messages"]] == [
        "hello",
        "Hi there!",
        "how are you?",
        "Fine, thanks.",
    ]


async def test_commands_work_at_the_console(app: App, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply("Hi there!"))

    out = await chat(app, "hello\n/status\n")

    assert "mnemo> Messages: 2\n" in out
    assert "Model: fake-model" in out
    assert fake_openai.calls == 1


async def test_end_of_input_at_once_ends_quietly(app: App, fake_openai: FakeOpenAI) -> None:
    assert await chat(app, "") == "you> "


async def test_a_console_message_left_by_a_crash_is_answered_first(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    inbox = Inbox(workspace / "state" / "inbox")
    left = Inbound(
        id="console:left",
        channel="console",
        chat_id=0,
        user_id=0,
        text="left",
        received_at=app.now(),
    )
    await inbox.accept(left)
    fake_openai.script(Reply("answering what was left"))

    out = await chat(app, "")

    assert out == "mnemo> answering what was left\nyou> "
    assert await inbox.pending() == []
