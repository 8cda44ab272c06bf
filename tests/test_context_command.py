"""/context: the last prompt of a chat in parts with their tokens, for owners only; `/context
full` sends the whole prompt as a file (through the fake Bot API's sendDocument)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bot.app import App
from bot.llm.tokens import TokenCounter
from bot.turn.commands.status import CONTEXT_OWNERS_ONLY, CONTEXT_USAGE
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import FRIEND, OWNER, make_settings, running_bot
from tests.talk import GROUP, RecordingReplier, message, say, write

TOTAL = "total"
ROW = re.compile(r"^(?P<label> *\S.*?)\s{2,}(?P<tokens>[\d,]+)(?:\s+counted offline)?$")


def table(reply: str) -> dict[str, int]:
    """The reply's rows: label (a section keeps its indent) → tokens; `total` too."""
    body = reply.split("```")[1]
    rows = {}
    for line in body.strip("\n").splitlines()[2:]:
        found = ROW.match(line)
        assert found, line
        rows[found["label"]] = int(found["tokens"].replace(",", ""))
    return rows


def status_figure(status: list[str]) -> str:
    """The "how full" figure /status gives."""
    found = re.search(r"Context: ([\d,]+) of ", status[0])
    assert found, status
    return found[1]


def counted(request: dict[str, Any]) -> int:
    """What the meter counts for a request as the model received it: 4 tokens a message, its
    text and its tool calls, and the tools' JSON."""
    tokens = TokenCounter()
    messages = sum(4 + tokens.count(m.get("content") or "") for m in request["messages"])
    for call in (c["function"] for m in request["messages"] for c in m.get("tool_calls", [])):
        messages += tokens.count(call["name"]) + tokens.count(call["arguments"])
    return messages + (tokens.count(json.dumps(request["tools"])) if "tools" in request else 0)


async def test_each_part_of_the_last_prompt_is_counted_and_they_add_up(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "- The boat is moored at pier seven.\n")
    write(workspace, f"{app.now():%Y-%m-%d}.md", "[08:00] User: buy oat milk | Assistant: Noted.\n")
    fake_openai.script(Reply("Pier seven."), Reply("Still there."))
    await say(app, "where is the boat?")
    await say(app, "and now?")

    [reply] = await say(app, "/context")

    rows = table(reply)
    tokens = TokenCounter()
    persona = make_settings(workspace, telegram=None, openai=fake_openai).persona
    assert rows["persona"] == tokens.count(persona)
    assert {"instructions", "# Memory", "current time"} <= set(rows)
    assert rows["  ## Long-term Memory"] == tokens.count(
        "## Long-term Memory\n- The boat is moored at pier seven."
    )
    assert "  ## Today's Notes" in rows
    assert rows["conversation (2 messages)"] > 0
    assert rows["the user's message"] == tokens.count("and now?")
    assert any(label.startswith("tools (") for label in rows)
    assert rows[TOTAL] == counted(fake_openai.requests[-1])
    top = [n for label, n in rows.items() if not label.startswith(" ") and label != TOTAL]
    assert sum(top) == rows[TOTAL]
    assert reply.startswith(f"Context: {status_figure(await say(app, '/status'))} of ")
    assert "/context full" in reply
    assert fake_openai.calls == 2  # /context asks the model nothing


async def test_the_tool_calls_of_the_turn_are_a_part_of_their_own(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(ToolCalls([("current_time", {})]), Reply("It is late."))
    await say(app, "what time is it?")

    [reply] = await say(app, "/context")

    rows = table(reply)
    assert rows["this turn's tool calls and results (2 messages)"] > 0
    assert rows[TOTAL] == counted(fake_openai.requests[-1])  # the turn's last request


async def test_only_owners_see_the_prompt(app: App, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply("hi friend"), Reply("hi group"))
    await say(app, "hello", user=FRIEND)
    await say(app, "hello all", user=OWNER, chat=GROUP)

    assert await say(app, "/context", user=FRIEND) == [CONTEXT_OWNERS_ONLY]
    assert await say(app, "/context full", user=FRIEND, chat=GROUP) == [CONTEXT_OWNERS_ONLY]
    [group] = await say(app, "/context", user=OWNER, chat=GROUP)
    assert "the user's message" in group  # the group's own last prompt


async def test_before_any_prompt_and_with_a_wrong_word_it_says_what_to_do(
    app: App, fake_openai: FakeOpenAI
) -> None:
    [none] = await say(app, "/context")
    assert "No prompt was sent in this chat" in none
    assert f"python -m bot prompt --chat telegram:{OWNER}" in none
    assert await say(app, "/context everything") == [CONTEXT_USAGE]


async def test_context_full_gives_the_whole_prompt_as_a_file(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))
    await say(app, "remember the red kite")
    replier = RecordingReplier()

    await app.router.handle(message("/context full", at=app.now()), replier)

    [document] = replier.documents
    assert document.name.startswith("context-") and document.name.endswith(".txt")
    sent = fake_openai.requests[-1]
    for each in sent["messages"]:
        assert each["content"] in document.text
    assert '"name": "current_time"' in document.text  # the tools' JSON
    [text] = replier.sent
    assert "persona" in text


async def test_context_full_arrives_as_a_document_in_telegram(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Noted: kites."))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "I fly a red kite")
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(OWNER, OWNER, "/context full")
        [_, table_message] = await fake_telegram.wait_for_messages(OWNER, 2)

    [document] = fake_telegram.sent_documents(OWNER)
    assert document.file.filename.endswith(".txt")
    text = document.file.data.decode("utf-8")
    assert "I fly a red kite" in text and "# Remembering" in text
    assert document.caption == "The whole prompt"
    assert "the user's message" in table_message.text
    assert document.message_id < table_message.message_id  # the file first, then the table
