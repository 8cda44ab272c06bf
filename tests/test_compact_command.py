"""/compact [N] through the real turn runner, and what /status says about the prompt."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import App
from tests.fakes.openai_api import Fail, FakeOpenAI, Hang, Reply
from tests.harness import small_window_settings, started_app
from tests.talk import RecordingReplier, message, say, session

RECEIPT = re.compile(
    r"Compacted: (\d+) → (\d+) messages, ~([\d,]+) → ~([\d,]+) tokens\. (.*); "
    r"a verbatim copy is in the history\."
)


@pytest.fixture
async def app(workspace: Path, tmp_path: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    """A 3,000-token window; /compact keeps 4 messages unless told."""
    async with started_app(small_window_settings(workspace, tmp_path, fake_openai)) as app:
        yield app


async def talk(app: App, fake: FakeOpenAI, turns: int) -> None:
    fake.script(*(Reply(f"answer {turn} " + "a" * 200) for turn in range(1, turns + 1)))
    for turn in range(1, turns + 1):
        await say(app, f"question {turn} " + "q" * 200)


def numbers(text: str) -> tuple[int, int, int, int, str]:
    match = RECEIPT.fullmatch(text)
    assert match is not None, text
    before, after, tokens_before, tokens_after = (
        int(g.replace(",", "")) for g in match.groups()[:4]
    )
    return before, after, tokens_before, tokens_after, match[5]


async def test_compact_keeps_the_default_number_and_says_what_it_did(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    await talk(app, fake_openai, 5)
    fake_openai.script(Reply("they asked five questions"))

    [reply] = await say(app, "/compact")

    before, after, tokens_before, tokens_after, how = numbers(reply)
    assert (before, after) == (10, 5)
    assert tokens_before > tokens_after > 0
    assert how == "The older messages are now one summary"
    saved = session(workspace)
    assert saved["compactions"] == 1
    assert saved["messages"][0]["content"] == "[Conversation summary]\nthey asked five questions"
    assert [m["content"].split()[1] for m in saved["messages"][1:]] == ["4", "4", "5", "5"]


async def test_compact_n_keeps_the_last_n(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    await talk(app, fake_openai, 5)
    fake_openai.script(Reply("summary"))

    [reply] = await say(app, "/compact 6")

    assert numbers(reply)[:2] == (10, 7)
    assert [m["role"] for m in session(workspace)["messages"]] == ["system"] + [
        "user",
        "assistant",
    ] * 3


async def test_compact_says_when_the_model_could_not_summarise(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    await talk(app, fake_openai, 3)
    fake_openai.script(Fail(503, "busy", type="server_error"))

    [reply] = await say(app, "/compact 2")

    assert reply == (
        "Not compacted: the model could not summarise the messages before the last 2, so all 6 "
        "stay as they were (nothing dropped). Try /compact again later."
    )


@pytest.mark.parametrize("args", ["abc", "0", "-3", "2.5", "4 please", "²"])
async def test_compact_with_a_bad_count_shows_the_usage(
    app: App, fake_openai: FakeOpenAI, workspace: Path, args: str
) -> None:
    await talk(app, fake_openai, 3)
    before = (workspace / "sessions").joinpath("telegram_1001.json").read_bytes()

    [reply] = await say(app, f"/compact {args}")

    assert reply == (
        "Usage: /compact [N] — summarise all but the last N messages (N a positive whole "
        "number; 4 when left out)."
    )
    assert fake_openai.calls == 3
    assert (workspace / "sessions").joinpath("telegram_1001.json").read_bytes() == before


async def test_compact_with_nothing_to_compact_says_so(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    assert await say(app, "/compact") == [
        "Nothing to compact: 0 messages, and /compact keeps the last 4."
    ]
    await talk(app, fake_openai, 2)

    assert await say(app, "/compact") == [
        "Nothing to compact: 4 messages, and /compact keeps the last 4."
    ]
    assert fake_openai.calls == 2
    assert session(workspace)["compactions"] == 0
    assert not (workspace / "memory" / "HISTORY.md").exists()


async def test_compact_after_a_summary_has_nothing_more_to_do(
    app: App, fake_openai: FakeOpenAI
) -> None:
    await talk(app, fake_openai, 3)
    fake_openai.script(Reply("summary"))
    await say(app, "/compact 2")

    [reply] = await say(app, "/compact 2")

    assert reply.startswith("Nothing to compact: what comes before the last 2 messages is")
    assert fake_openai.calls == 4


async def test_compact_waits_for_the_running_turn(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    await talk(app, fake_openai, 2)
    fake_openai.script(Hang(then=Reply("late answer")), Reply("summary"))
    turn = asyncio.create_task(
        app.router.handle(message("third", at=app.now()), RecordingReplier())
    )
    await fake_openai.wait_until_hanging()

    compact = asyncio.create_task(say(app, "/compact 2"))
    await asyncio.sleep(0.2)
    assert not compact.done()
    fake_openai.release()
    await asyncio.wait_for(turn, timeout=5)
    [reply] = await asyncio.wait_for(compact, timeout=5)

    assert numbers(reply)[:2] == (6, 3)  # the turn's exchange was there to compact
    contents = [m["content"] for m in session(workspace)["messages"]]
    assert contents == ["[Conversation summary]\nsummary", "third", "late answer"]


async def test_help_lists_compact(app: App) -> None:
    [text] = await say(app, "/help")

    assert "/compact — " in text


async def test_status_shows_prompt_window_and_tells_compaction_from_consolidation(
    app: App, fake_openai: FakeOpenAI
) -> None:
    await talk(app, fake_openai, 2)
    fake_openai.script(Reply("summary"), Reply("ok", prompt_tokens=777))
    await say(app, "/compact 2")
    await say(app, "and now")

    [status] = await say(app, "/status verbose")

    lines = status.splitlines()
    assert lines[0] == "Messages: 5"
    assert re.fullmatch(r"Context: [\d,]+ of 6,000 tokens \(\d+%\), the next prompt .*", lines[1])
    assert re.fullmatch(
        rf"Last compaction: {app.now():%Y-%m-%d} \d\d:\d\d \(1 in this conversation\)", lines[2]
    )
    assert lines[3] == "Last consolidation: none yet"  # a compaction is not a consolidation
    assert lines[4] == "Model: fake-model"
    assert re.fullmatch(r"Counted: [\d,]+ tokens offline × .* margin = [\d,]+", lines[6])
    assert lines[7] == "Last prompt, as the provider counted it: 777 tokens"
