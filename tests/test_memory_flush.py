"""The pre-compaction memory flush (system 17): silent, once per compaction cycle, its tags
stored like any reply's, and never costing the user a reply."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.conversation.flush import FLUSH_REQUEST
from bot.systems.flush import flush_trigger
from tests.fakes.openai_api import Fail, FakeOpenAI, Reply, Step
from tests.harness import small_window_settings, started_app
from tests.talk import handle, message, say, session

WORDS = "word " * 100  # about 100 tokens
FLUSH_REPLY = "Saving. <memory>Ann's passport expires in May</memory> NO_REPLY"
MakeApp = Callable[..., Awaitable[App]]  # make_app(**compaction settings)


@pytest.fixture
async def make_app(
    workspace: Path, tmp_path: Path, fake_openai: FakeOpenAI
) -> AsyncIterator[MakeApp]:
    """Apps with a 3,000-token window (flush from 2,063 tokens, compaction from 2,400)."""
    async with AsyncExitStack() as stack:

        async def make(**compaction: Any) -> App:
            options = {"flush_enabled": True, **compaction}
            settings = small_window_settings(workspace, tmp_path, fake_openai, **options)
            return await stack.enter_async_context(started_app(settings))

        yield make


def is_flush(request: dict[str, Any]) -> bool:
    return str(request["messages"][-1]["content"]) == FLUSH_REQUEST


def answers(flush: Step | None = None) -> Callable[[dict[str, Any]], Step]:
    def answer(request: dict[str, Any]) -> Step:
        if is_flush(request):
            return flush or Reply(FLUSH_REPLY)
        return Reply("the summary" if request["model"] == "fake-fast" else "fine")

    return answer


def flushes(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [r for r in fake.requests if is_flush(r)]


def test_the_trigger_scales_down_for_small_windows_and_never_comes_after_compaction() -> None:
    assert flush_trigger(3000, threshold=0.8, reserve_floor=20000, soft=4000) == 2063
    assert flush_trigger(128_000, threshold=0.8, reserve_floor=20000, soft=4000) == 102_400
    assert flush_trigger(1_000_000, threshold=0.8, reserve_floor=20000, soft=4000) == 800_000


async def test_the_flush_is_silent_and_stores_its_tags(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    fake_openai.answer_all(answers())
    replies: list[str] = []
    while not flushes(fake_openai):
        replies += await say(app, WORDS)

    assert set(replies) == {"fine"}  # the flush's own text never reached the user
    memory = (workspace / "memory" / "MEMORY.md").read_text()
    assert "Ann's passport expires in May" in memory
    [flush] = flushes(fake_openai)
    sent = [m["content"] for m in flush["messages"]]
    assert "Memory flush" in sent[0] and WORDS.strip() in sent[1]
    assert all("NO_REPLY" not in (m["content"] or "") for m in session(workspace)["messages"])


async def test_one_flush_per_compaction_cycle(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    fake_openai.answer_all(answers())
    cycles: list[tuple[int, int]] = []  # (compactions, flushes) after each turn
    for _ in range(70):
        await say(app, WORDS)
        cycles.append((session(workspace)["compactions"], len(flushes(fake_openai))))

    compactions = cycles[-1][0]
    assert compactions >= 2
    assert len(flushes(fake_openai)) <= compactions + 1
    for (before_c, before_f), (after_c, after_f) in itertools.pairwise(cycles):
        if after_c == before_c:
            assert after_f - before_f <= 1
    first_flush = next(i for i, (_, f) in enumerate(cycles) if f)
    assert all(f == 1 for c, f in cycles[first_flush:] if c == cycles[first_flush][0])


async def test_a_failed_flush_costs_nothing(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    fake_openai.answer_all(answers(flush=Fail(500, "flush exploded")))
    replies: list[str] = []
    while not flushes(fake_openai):
        replies += await say(app, WORDS)

    assert set(replies) == {"fine"}
    assert not (workspace / "memory" / "MEMORY.md").exists()
    assert len(flushes(fake_openai)) == 1  # not retried on every turn of this cycle
    replies += await say(app, WORDS)
    assert len(flushes(fake_openai)) == 1


async def test_no_flush_when_turned_off(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app(flush_enabled=False)
    fake_openai.answer_all(answers())
    for _ in range(60):
        await say(app, WORDS)
        if session(workspace)["compactions"]:
            break
    assert session(workspace)["compactions"] == 1
    assert flushes(fake_openai) == []


async def test_what_the_flush_draws_from_a_forwarded_message_is_a_quote(
    make_app: MakeApp, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = await make_app()
    fake_openai.answer_all(answers(Reply("<memory>Mallory's vault code is 4417</memory>")))
    await handle(app, replace(message("The vault code is 4417", at=app.now()), forwarded=True))
    while not flushes(fake_openai):
        await say(app, WORDS)

    memory = workspace / "memory"
    assert "4417" not in "".join(p.read_text() for p in memory.rglob("MEMORY.md"))
    quotes = (memory / "QUOTED.md").read_text()
    assert "“Mallory's vault code is 4417” — this conversation, forwarded, telegram:" in quotes
