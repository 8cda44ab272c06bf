"""How full a chat's prompt is: one figure, the same in /status, /status verbose, /context and
/compact for the same chat state; and a chat no turn has measured yet (a new chat, or after
/new) shows what its first prompt really takes."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from bot.app import App
from bot.llm.tokens import TokenCounter
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.talk import say, write
from tests.test_context_command import counted

FIGURE = re.compile(r"Context: ([\d,]+) of ([\d,]+) tokens \((\d+%|under 1%)\)")
DERIVED = re.compile(r"Counted: [\d,]+ tokens offline × [\d.]+ \(.*\) \+ 10% margin = ([\d,]+)")
COMPACTED = re.compile(r"Compacted: \d+ → \d+ messages, ~([\d,]+) → ~([\d,]+) tokens\. ")


def number(text: str) -> int:
    return int(text.replace(",", ""))


def figure(reply: str) -> int:
    """The "how full" headline of a reply."""
    found = FIGURE.search(reply)
    assert found, reply
    return number(found[1])


def derived(reply: str) -> int:
    """What the reply's "Counted: …" line adds up to."""
    found = DERIVED.search(reply)
    assert found, reply
    return number(found[1])


def first_prompt_figure(request: dict[str, Any], message: str) -> int:
    """The figure a first prompt takes, as the meter puts it (no provider count yet: × 1, and
    10% margin): the request as received, without its user message (4 tokens and its text)."""
    user = 4 + TokenCounter().count(message)
    return math.ceil((counted(request) - user) * 1.1)


async def test_status_verbose_context_and_compact_give_one_figure(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "- The boat is moored at pier seven.\n")
    fake_openai.script(
        Reply("Pier seven.", prompt_tokens=433),  # the provider counts less than we do
        Reply("Still there.", prompt_tokens=433),
        Reply("They asked where the boat is."),  # /compact's summary
    )
    await say(app, "where is the boat? " * 20)
    await say(app, "and now?")

    [status] = await say(app, "/status")
    [verbose] = await say(app, "/status verbose")
    [context] = await say(app, "/context")
    [compacted] = await say(app, "/compact 2")
    [after] = await say(app, "/status")

    shown = figure(status)
    assert figure(verbose) == derived(verbose) == shown
    assert figure(context) == derived(context) == shown  # the table tied to the figure
    found = COMPACTED.match(compacted)
    assert found, compacted
    assert number(found[1]) == shown and number(found[2]) == figure(after) < shown


async def test_a_new_chat_shows_what_its_first_prompt_takes(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "- The boat is moored at pier seven.\n")
    [status] = await say(app, "/status")
    fake_openai.script(Reply("Pier seven."))
    await say(app, "where is the boat?")

    [request] = fake_openai.requests
    assert "Messages: 0" in status
    assert figure(status) == first_prompt_figure(request, "where is the boat?")


async def test_after_new_the_figure_is_the_next_first_prompt_again(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Pier seven."), Reply('{"history_entry": "Asked for the boat."}'))
    await say(app, "where is the boat?")
    await say(app, "/new")  # consolidated: the history entry is the model's
    [status] = await say(app, "/status")
    fake_openai.script(Reply("Hello!"))
    await say(app, "hello there friend")  # a message that recalls nothing

    first = fake_openai.requests[-1]
    assert "Relevant Memory" not in str(first["messages"])
    assert "Messages: 0" in status
    assert figure(status) == first_prompt_figure(first, "hello there friend")
