"""Chat commands through the real turn runner: /start /help /new /reset /status /stop, unknown."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI, Hang, Reply
from tests.harness import FRIEND, OWNER
from tests.talk import RecordingReplier, conversation, message, system_text
from tests.talk import say as say_at

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
SESSION = f"sessions/telegram_{OWNER}.json"
say = partial(say_at, at=NOW)  # every message arrives at NOW


def memory_files(workspace: Path) -> dict[Path, bytes]:
    """The markdown memory (structured items, `memory/items/`, aside)."""
    root = workspace / "memory"
    found = (p for p in root.rglob("*") if p.is_file() and p.relative_to(root).parts[0] != "items")
    return {p: p.read_bytes() for p in found}


async def test_help_lists_every_command(app: App, fake_openai: FakeOpenAI) -> None:
    [text] = await say(app, "/help")
    [others] = await say(app, "/help", user=FRIEND)

    for name in ("start", "help", "new", "reset", "status", "stop", "pair", "unpair"):
        assert f"/{name} — " in text
    assert "/pair" not in others and "/status — " in others  # pairing is the owners'
    assert fake_openai.calls == 0


async def test_start_greets(app: App, fake_openai: FakeOpenAI) -> None:
    [text] = await say(app, "/start")

    assert text.startswith("Hello! I'm Mnemo")
    assert "/help" in text
    assert fake_openai.calls == 0


@pytest.mark.parametrize("command", ["/new", "/reset"])
async def test_new_archives_the_session_and_keeps_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path, command: str
) -> None:
    (workspace / "memory" / "MEMORY.md").write_text("Ann likes green tea.\n")
    consolidation = json.dumps({"history_entry": "[2026-11-21 09:30] Ann said hi."})
    fake_openai.script(Reply("hello"), Reply(consolidation), Reply("fresh start"))
    await say(app, "hi")
    memory_before = memory_files(workspace)
    assert len(memory_before) == 2  # MEMORY.md and today's note

    assert await say(app, command) == [
        "Started a new conversation. I saved what mattered from the last one (2 messages) to "
        "memory."
    ]

    [archived] = (workspace / "sessions" / "archive").glob("*.json")
    assert [m["content"] for m in json.loads(archived.read_text())["messages"]] == ["hi", "hello"]
    assert json.loads((workspace / SESSION).read_text())["messages"] == []
    memory_after = memory_files(workspace)
    assert {p: memory_after[p] for p in memory_before} == memory_before  # history was added
    assert "Ann said hi." in (workspace / "memory" / "HISTORY.md").read_text()
    await say(app, "again")
    [user] = conversation(fake_openai.last_request)
    assert user == {"role": "user", "content": "again"}
    assert "Ann likes green tea." in system_text(fake_openai.last_request)


async def test_status_of_a_new_conversation_in_plain_words(
    app: App, fake_openai: FakeOpenAI
) -> None:
    [text] = await say(app, "/status")

    lines = text.splitlines()
    assert re.fullmatch(
        r"Context: [\d,]+ of 32,768 tokens \((\d+%|under 1%)\), the next prompt with its "
        r"instructions, memory, conversation and tools",
        lines.pop(1),
    )
    assert lines == [
        "Messages: 0",
        "Last compaction: none yet",
        "Last consolidation: none yet",
        "Model: fake-model",
        "/status verbose shows the details.",
    ]
    assert "Pipeline" not in text


@pytest.mark.parametrize("form", ["/status verbose", "/status -v"])
async def test_status_verbose_adds_the_window_the_counts_and_the_pipeline(
    app: App, fake_openai: FakeOpenAI, form: str
) -> None:
    [text] = await say(app, form)

    lines = text.splitlines()
    assert lines[:1] == ["Messages: 0"]
    assert lines[4:] == [
        "Model: fake-model",
        "Context window: 32,768 tokens (assumed: not in config/models.json; "
        "set BOT_LLM__CONTEXT_WINDOW)",
        lines[6],
        "Last prompt: none yet",
        "Pipeline: 17 memory-flush, 18 auto-compaction, 19 files-first, 20 context-building, "
        "22 reminders, 30 tool-loop, 40 memory-tags, 50 memory-persist, 55 rag-indexing",
    ]
    assert re.fullmatch(
        r"Counted: [\d,]+ tokens offline × 1.00 \(.*\) \+ 10% margin = [\d,]+", lines[6]
    )


async def test_status_counts_messages_tokens_and_names_the_model(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("hello there, how can I help you today?", prompt_tokens=1234))
    await say(app, "hi")

    [text] = await say(app, "/status")
    [verbose] = await say(app, "/status verbose")

    assert "Messages: 2" in text
    context = re.search(r"Context: ([\d,]+) of 32,768 tokens \((\d+)%\)", text)
    assert context is not None
    tokens = int(context[1].replace(",", ""))
    assert tokens >= 2 * 4 + 10  # two messages' overhead and words
    assert int(context[2]) == round(100 * tokens / 32768)
    assert "Model: fake-model" in text
    assert f"margin = {tokens:,}\n" in verbose
    assert "Last prompt, as the provider counted it: 1,234 tokens" in verbose


async def test_status_tells_a_consolidation_from_a_compaction(
    app: App, fake_openai: FakeOpenAI
) -> None:
    consolidation = json.dumps({"history_entry": "[2026-11-21 09:30] Ann said hi."})
    fake_openai.script(Reply("hello"), Reply(consolidation))
    await say(app, "hi")
    await say(app, "/new")

    [text] = await say(app, "/status")

    lines = text.splitlines()
    assert lines[2] == "Last compaction: none yet"
    assert re.fullmatch(r"Last consolidation: \d{4}-\d\d-\d\d \d\d:\d\d", lines[3])


async def test_a_command_addressed_to_this_bot_works(app: App) -> None:
    [text] = await say(app, "/status@mnemo_test_bot")

    assert text.startswith("Messages: 0")


async def test_an_unknown_command_says_so_and_never_reaches_the_model(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    [text] = await say(app, "/frobnicate now")

    assert text == "Unknown command /frobnicate. /help lists what I understand."
    assert fake_openai.calls == 0
    assert not (workspace / SESSION).exists()
    assert list((workspace / "state" / "inbox").iterdir()) == []


async def test_stop_with_nothing_running(app: App) -> None:
    assert await say(app, "/stop") == ["Nothing to stop."]


async def test_stop_cancels_a_turn_waiting_on_the_model(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("first answer"), Hang(), Reply("third answer"))
    await say(app, "one")
    session_before = (workspace / SESSION).read_bytes()
    hanging = RecordingReplier()
    turn = asyncio.create_task(app.router.handle(message("two", at=NOW), hanging))
    await fake_openai.wait_until_hanging()
    assert len(list((workspace / "state" / "inbox").iterdir())) == 1
    [status] = await say(app, "/status")

    assert await say(app, "/stop") == ["Stopped."]

    await asyncio.wait_for(turn, timeout=5)
    assert "A reply is in progress" in status
    assert hanging.sent == []
    assert list((workspace / "state" / "inbox").iterdir()) == []
    assert (workspace / SESSION).read_bytes() == session_before
    assert await say(app, "three") == ["third answer"]  # the chat is not stuck
    contents = [m["content"] for m in conversation(fake_openai.last_request)]
    assert contents == ["one", "first answer", "three"]
