"""Compaction through the real app: automatic past the threshold (system 18), the summary
request, the fallback when the model fails, tool calls never parted from their results,
chained summaries, and the verbatim checkpoint in the session archive."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.app import App
from tests.fakes.openai_api import Fail, FakeOpenAI, Hang, Reply, Step, ToolCalls
from tests.harness import OWNER, small_window_settings, started_app
from tests.talk import GROUP, GROUP_DIR, conversation, say, session

WORDS = "word " * 100  # about 100 tokens
SUMMARY = "[Conversation summary]"
LINE_HEAD = re.compile(r"^\[[^\]]+\] [A-Z]+(?: \[tools: [^\]]+\])?:\s?")
WEEKDAY = re.compile(r"(Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day")
MakeApp = Callable[..., Awaitable[App]]  # make_app(**compaction settings)


@pytest.fixture
async def make_app(
    workspace: Path, tmp_path: Path, fake_openai: FakeOpenAI
) -> AsyncIterator[MakeApp]:
    """Apps over `small_window_settings` (a 6,000-token window, keeping 4 messages);
    `**compaction` overrides compaction settings."""
    async with AsyncExitStack() as stack:

        async def make(**compaction: Any) -> App:
            settings = small_window_settings(workspace, tmp_path, fake_openai, **compaction)
            return await stack.enter_async_context(started_app(settings))

        yield make


def answers(summary: str = "the summary") -> Callable[[dict[str, Any]], Step]:
    """The fast model summarises; the main model says "fine"."""
    return lambda request: Reply(summary if request["model"] == "fake-fast" else "fine")


def summary_requests(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [r for r in fake.requests if r["model"] == "fake-fast"]


def contents(workspace: Path, key: str = f"telegram:{OWNER}") -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in session(workspace, key)["messages"]]


async def a_tool_conversation(app: App, fake: FakeOpenAI) -> None:
    """u a u a(tool call) t a u a — the cut for keep=4 would fall between call and result."""
    fake.script(
        Reply("r1"),
        ToolCalls([("current_time", {})]),
        Reply("It is late."),
        Reply("welcome"),
    )
    for text in ("one", "what time is it?", "thanks"):
        await say(app, text)


async def test_past_the_threshold_the_session_is_compacted_before_the_turn(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    fake_openai.answer_all(answers())

    with capture_logs() as logs:
        turns = 0
        while not summary_requests(fake_openai):
            turns += 1
            assert await say(app, f"{turns} {WORDS}") == ["fine"]

    [needed] = [e for e in logs if e["event"] == "auto_compact"]
    assert turns >= 4  # well under the threshold at first
    assert needed["threshold"] == 4800 < needed["estimated_tokens"]
    assert needed["messages"] == 2 * (turns - 1)
    [done] = [e for e in logs if e["event"] == "compacted"]
    assert (done["reason"], done["by"], done["kept"]) == ("auto", "summary", 4)
    assert done["removed"] == 2 * (turns - 1) - 4
    saved = session(workspace)
    assert saved["compactions"] == 1
    assert contents(workspace)[0] == ("system", f"{SUMMARY}\nthe summary")
    assert [c.split()[0] for _, c in contents(workspace)[1:]] == [
        str(turns - 2),
        "fine",
        str(turns - 1),
        "fine",
        str(turns),
        "fine",
    ]
    sent = [fake_openai.last_request["messages"][0], *conversation(fake_openai.last_request)]
    assert sent[1] == {"role": "system", "content": f"{SUMMARY}\nthe summary"}
    assert len(sent) == 1 + 1 + 4 + 1


async def test_a_long_conversation_stays_under_the_window(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    fake_openai.answer_all(answers())

    for turn in range(60):
        await say(app, f"{turn} {WORDS}")

    main = [r for r in fake_openai.requests if r["model"] == "fake-model"]
    assert len(main) == 60
    assert max(len(str(r["messages"])) // 4 for r in main) < 6000
    assert session(workspace)["compactions"] == len(summary_requests(fake_openai)) >= 1


async def test_disabled_compaction_never_compacts(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app(enabled=False)
    fake_openai.answer_all(answers())

    for turn in range(15):
        await say(app, f"{turn} {WORDS}")

    assert summary_requests(fake_openai) == []
    assert len(session(workspace)["messages"]) == 30


async def test_the_summary_request_uses_the_fast_model_and_short_lines_without_tool_results(
    make_app: MakeApp, fake_openai: FakeOpenAI
) -> None:
    app = await make_app()
    fake_openai.script(Reply("y" * 800))
    await say(app, "x" * 1000)
    await a_tool_conversation(app, fake_openai)
    fake_openai.script(Reply("the summary"))

    await say(app, "/compact 2")

    [request] = summary_requests(fake_openai)
    assert (request["temperature"], request["max_tokens"]) == (0.3, 500)
    assert "tools" not in request
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    conversation = request["messages"][1]["content"].split("## Conversation\n")[1].splitlines()
    texts = [LINE_HEAD.sub("", line) for line in conversation]
    assert texts == [
        "x" * 299 + "…",
        "y" * 299 + "…",
        "one",
        "r1",
        "what time is it?",
        "",
        "It is late.",
    ]
    assert "ASSISTANT [tools: current_time]:" in conversation[5]
    assert not WEEKDAY.search(request["messages"][1]["content"])  # the tool's result


@pytest.mark.parametrize(
    ("step", "cause"),
    [
        (Fail(500, "down", type="server_error"), "summary_llm_failed"),
        (Reply("   "), "summary_empty"),
        (Hang(), "summary_timed_out"),
    ],
    ids=["error", "empty", "timeout"],
)
async def test_when_the_model_fails_no_message_is_dropped(
    make_app: MakeApp,
    fake_openai: FakeOpenAI,
    workspace: Path,
    step: Step,
    cause: str,
) -> None:
    app = await make_app(summary_timeout=0.2)
    await a_tool_conversation(app, fake_openai)
    before = contents(workspace)
    fake_openai.script(step)

    with capture_logs() as logs:
        [reply] = await say(app, "/compact 2")

    assert "Not compacted" in reply and "all 8 stay as they were" in reply
    assert contents(workspace) == before and len(before) == 8
    assert session(workspace)["compactions"] == 0
    warnings = [e for e in logs if e["log_level"] == "warning" and e["event"] != "llm_error"]
    assert [e["event"] for e in warnings] == [cause, "compaction_failed"]
    assert (warnings[1]["old"], warnings[1]["kept"]) == (6, 2)
    history = workspace / "memory" / "HISTORY.md"
    assert not history.exists() or "[checkpoint]" not in history.read_text()


async def test_a_failed_summary_keeps_the_earlier_summary_and_every_message_after_it(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    fake_openai.script(Reply("a1"), Reply("a2"), Reply("first summary"))
    await say(app, "q1")
    await say(app, "q2")
    await say(app, "/compact 2")
    fake_openai.script(Reply("a3"), Fail(500, "down", type="server_error"))
    await say(app, "q3")

    await say(app, "/compact 2")

    assert contents(workspace) == [
        ("system", f"{SUMMARY}\nfirst summary"),
        ("user", "q2"),
        ("assistant", "a2"),
        ("user", "q3"),
        ("assistant", "a3"),
    ]
    assert session(workspace)["compactions"] == 1


def staged_models(folder: Path) -> Path:
    """The main model a large window, the summary model 2,000 tokens (issue 36: a 5,677-token
    request went to such a model in one piece)."""
    path = folder / "staged-models.json"
    windows = {"fake-model": 32768, "fake-fast": 2000}
    path.write_text(json.dumps({"version": 1, "context_windows": windows}))
    return path


def staged_answers(request: dict[str, Any]) -> Step:
    if request["model"] != "fake-fast":
        return Reply("fine")
    text = request["messages"][-1]["content"]
    return Reply("the whole story" if "## Summaries of consecutive parts" in text else "a part")


def request_tokens(request: dict[str, Any]) -> int:
    """The request's messages and its answer's room, counted as the bot counts (tiktoken)."""
    from bot.llm.tokens import TokenCounter

    counter = TokenCounter()
    return sum(counter.count(m["content"]) + 4 for m in request["messages"]) + int(
        request["max_tokens"]
    )


async def test_a_conversation_larger_than_the_summary_window_is_summarised_in_stages(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path, tmp_path: Path
) -> None:
    app = await make_app(models_file=staged_models(tmp_path))
    fake_openai.answer_all(staged_answers)
    for turn in range(40):
        await say(app, f"turn{turn} {WORDS}")

    [reply] = await say(app, "/compact 2")

    requests = summary_requests(fake_openai)
    assert "now one summary" in reply
    assert len(requests) >= 3  # two parts at least, and the summary of their summaries
    assert max(request_tokens(r) for r in requests) <= 2000
    parts = "\n".join(r["messages"][-1]["content"] for r in requests[:-1])
    assert all(f"turn{turn} " in parts for turn in range(39))  # every old message in a part
    assert requests[-1]["messages"][-1]["content"].count("a part") == len(requests) - 1
    assert contents(workspace)[0] == ("system", f"{SUMMARY}\nthe whole story")
    assert len(contents(workspace)) == 3


async def test_a_failed_part_leaves_the_conversation_whole(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path, tmp_path: Path
) -> None:
    app = await make_app(models_file=staged_models(tmp_path))
    fake_openai.answer_all(staged_answers)
    for turn in range(40):
        await say(app, f"turn{turn} {WORDS}")
    fake_openai.script(Reply("a part"), Fail(400, "context length exceeded"))

    [reply] = await say(app, "/compact 2")

    assert "Not compacted" in reply
    assert len(contents(workspace)) == 80
    assert session(workspace)["compactions"] == 0


async def test_a_tool_call_is_never_parted_from_its_result(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    await a_tool_conversation(app, fake_openai)
    fake_openai.script(Reply("the summary"), Reply("next"))

    await say(app, "/compact 4")

    roles = [role for role, _ in contents(workspace)]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    saved = session(workspace)["messages"]
    assert saved[2]["tool_calls"][0]["id"] == saved[3]["tool_call_id"]
    [request] = summary_requests(fake_openai)
    assert request["messages"][1]["content"].count("\n") == 2  # heading, "one", "r1"
    assert await say(app, "and now?") == ["next"]  # the fake rejects an orphaned result


async def test_summaries_chain_an_earlier_summary_is_summarised_in_full(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    first = "s" * 600
    fake_openai.script(Reply("a1"), Reply("a2"), Reply(first))
    await say(app, "q1")
    await say(app, "q2")
    await say(app, "/compact 2")
    fake_openai.script(Reply("a3"), Reply("second summary"))
    await say(app, "q3")

    await say(app, "/compact 2")

    second = summary_requests(fake_openai)[1]["messages"][1]["content"]
    assert second.startswith(f"## Earlier summary\n{first}\n\n## Conversation\n")
    assert second.endswith("USER: q2\n" + second.splitlines()[-1])
    summaries = [c for role, c in contents(workspace) if role == "system"]
    assert summaries == [f"{SUMMARY}\nsecond summary"]


async def test_the_checkpoint_keeps_the_old_messages_verbatim_in_the_session_archive(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    long = "line one\n## not a heading\n" + "z" * 1000
    fake_openai.script(Reply("long answer"))
    await say(app, long)
    await a_tool_conversation(app, fake_openai)
    fake_openai.script(Reply("the summary"))

    await say(app, "/compact 2")

    history = (workspace / "memory" / "HISTORY.md").read_text()
    match = re.search(
        r"\[checkpoint\] 8 messages before compaction \(manual\), verbatim in (\S+)\n", history
    )
    assert match is not None
    kept = json.loads((workspace / match[1]).read_text())
    assert kept["key"] == f"telegram:{OWNER}" and len(kept["messages"]) == 8
    assert kept["messages"][0]["content"] == long
    assert any(m.get("tool_calls") for m in kept["messages"])
    assert any(m["role"] == "tool" and WEEKDAY.search(m["content"]) for m in kept["messages"])
    assert "## not a heading" not in history  # the messages are not copied into history
    monthly = workspace / "memory" / f"HISTORY-{app.now():%Y-%m}.md"
    assert monthly.read_text() == history


async def test_in_a_group_the_checkpoint_goes_to_the_chat_history_only(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    fake_openai.script(Reply("a1"), Reply("a2"), Reply("the summary"))
    await say(app, "group secret", chat=GROUP)
    await say(app, "q2", chat=GROUP)

    await say(app, "/compact 2", chat=GROUP)

    assert "[checkpoint]" in (workspace / "memory" / GROUP_DIR / "HISTORY.md").read_text()
    assert not (workspace / "memory" / "HISTORY.md").exists()
    archived = list((workspace / "sessions" / "archive").glob(f"telegram_{GROUP}-*.json"))
    assert len(archived) == 1 and "group secret" in archived[0].read_text()
    assert session(workspace, f"telegram:{GROUP}")["compactions"] == 1
