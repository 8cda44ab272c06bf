"""System 50, memory persist: the session file after a turn, the daily note line, a failed note."""

from __future__ import annotations

import re
from pathlib import Path

from structlog.testing import capture_logs

from bot.app import App
from bot.models import Inbound
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls
from tests.harness import OWNER
from tests.talk import conversation, handle, message, session

NOTE_LINE = re.compile(r"\[(\d\d):(\d\d)\] User: (.*) \| Assistant: (.*)")


async def say(app: App, text: str) -> tuple[Inbound, list[str]]:
    """A message from the owner; it, and the replies."""
    inbound = message(text, at=app.now())
    return inbound, await handle(app, inbound)


def note_lines(app: App, workspace: Path) -> list[str]:
    return (workspace / "memory" / f"{app.now().date()}.md").read_text().splitlines()


async def test_the_session_holds_the_exchange_the_inbound_id_and_usage(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("hello there", prompt_tokens=120))
    inbound, _ = await say(app, "hi")

    saved = session(workspace)

    assert saved["version"] == 1
    assert saved["key"] == f"telegram:{OWNER}"
    assert [(m["role"], m["content"]) for m in saved["messages"]] == [
        ("user", "hi"),
        ("assistant", "hello there"),
    ]
    assert all(m.get("at") for m in saved["messages"])
    assert saved["metadata"]["last_inbound_id"] == inbound.id
    assert (saved["last_prompt_tokens"], saved["total_prompt_tokens"]) == (120, 120)
    assert saved["total_completion_tokens"] == 2  # len("hello there") // 4


async def test_usage_totals_add_up_over_turns(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("x" * 40, prompt_tokens=120), Reply("y" * 80, prompt_tokens=300))
    await say(app, "one")
    second, _ = await say(app, "two")

    saved = session(workspace)

    assert len(saved["messages"]) == 4
    assert saved["last_prompt_tokens"] == 300
    assert saved["total_prompt_tokens"] == 420
    assert saved["total_completion_tokens"] == 10 + 20
    assert saved["metadata"]["last_inbound_id"] == second.id


async def test_a_tool_exchange_is_saved_and_sent_back_valid_next_turn(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(ToolCalls([("current_time", {})]), Reply("It is morning."), Reply("ok"))
    await say(app, "what time is it?")

    roles = [m["role"] for m in session(workspace)["messages"]]
    await say(app, "thanks")

    assert roles == ["user", "assistant", "tool", "assistant"]
    sent = [fake_openai.last_request["messages"][0], *conversation(fake_openai.last_request)]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["tool_calls"][0]["id"] == sent[3]["tool_call_id"]


async def test_the_daily_note_gets_one_line_per_exchange(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Hello, Ann!"), Reply("Tea, noted."))
    await say(app, "hi")
    await say(app, "I like tea")

    first, second = note_lines(app, workspace)

    assert re.fullmatch(r"\[\d\d:\d\d\] User: hi \| Assistant: Hello, Ann!", first)
    assert second.endswith("] User: I like tea | Assistant: Tea, noted.")


async def test_note_text_is_folded_to_one_line_and_cut(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    said = "line one\n\nline two\t" + "x" * 500
    answered = "para one\n\n" + "y" * 1000
    fake_openai.script(Reply(answered))
    await say(app, said)

    [line] = note_lines(app, workspace)
    match = NOTE_LINE.fullmatch(line)

    assert match is not None
    user, assistant = match[3], match[4]
    assert user == ("line one line two " + "x" * 500)[:199] + "…"
    assert assistant == ("para one " + "y" * 1000)[:299] + "…"
    assert (len(user), len(assistant)) == (200, 300)


async def test_a_failed_note_write_is_logged_and_costs_nothing_else(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    note = workspace / "memory" / f"{app.now().date()}.md"
    note.mkdir(parents=True)  # a folder where the note goes: the append fails
    fake_openai.script(Reply("still here"))

    with capture_logs() as logs:
        _, sent = await say(app, "hi")

    assert sent == ["still here"]
    assert [m["content"] for m in session(workspace)["messages"]] == ["hi", "still here"]
    [failure] = [e for e in logs if e["event"] == "daily_note_failed"]
    assert failure["log_level"] == "warning"
    assert failure["exc_info"] is True
    assert list((workspace / "state" / "inbox").iterdir()) == []
