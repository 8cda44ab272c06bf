"""`memory_search` through the real app: citations and scores, scope isolation, bad arguments, a
failing index answered in words, and the recall contract in the system prompt."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.app import App
from bot.index import Hit
from bot.index.search import Wait
from bot.models import GLOBAL_SCOPE, MemoryScope, ToolCall
from bot.settings import RagSettings
from bot.tools.memory_search import MemorySearch
from bot.tools.registry import ToolContext, ToolRegistry
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import make_settings, started_app
from tests.talk import GROUP, GROUP_DIR, OWNER_CHAT_DIR, say, tool_result, write

OWNER_KEY = "telegram:1001"
GROUP_SCOPE = MemoryScope(f"telegram:{GROUP}")
CONTRACT = (
    "Before answering questions about prior work, decisions, dates, people, preferences or "
    "todos, run memory_search; then memory_get only the lines you need."
)
HIT = re.compile(r"^\[(\d+)\] (\S+) \(score (0\.\d{4}), kind (\w+), \d{4}-\d{2}-\d{2}\)$", re.M)


def seed(workspace: Path) -> None:
    """Every scope remembers a violin recital, in words of its own."""
    write(workspace, "MEMORY.md", "# Family\n\nMia's violin recital is on Friday at six.\n")
    write(workspace, "2026-11-20.md", "[09:15] User: book the piano tuner | Assistant: Booked.\n")
    write(workspace, f"{OWNER_CHAT_DIR}/MEMORY.md", "# Chat\nThe recital tickets are printed.\n")
    write(workspace, f"{GROUP_DIR}/MEMORY.md", "# Group\nThe violin recital picnic needs chairs.\n")
    write(workspace, "chats/telegram%3A-999/MEMORY.md", "Another band's violin recital.\n")


@pytest.fixture
async def app(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    """The real app over a workspace whose memory was written before it started."""
    seed(workspace)
    async with started_app(make_settings(workspace, telegram=None, openai=fake_openai)) as app:
        yield app


async def search(app: App, fake: FakeOpenAI, chat: int | None = None, **args: object) -> str:
    return await tool_result(app, fake, "memory_search", dict(args), chat=chat)


def cited(answer: str) -> list[str]:
    return [match[2] for match in HIT.finditer(answer)]


async def test_hits_come_with_citations_scores_and_snippets(
    app: App, fake_openai: FakeOpenAI
) -> None:
    answer = await search(app, fake_openai, query="When is the violin recital?")

    first = HIT.match(answer)
    assert first is not None
    assert first.groups() == ("1", "MEMORY.md#L1-L3", first[3], "memory")
    assert float(first[3]) > 0
    assert "Mia's violin recital is on Friday at six." in answer
    assert set(cited(answer)) == {"MEMORY.md#L1-L3", f"{OWNER_CHAT_DIR}/MEMORY.md#L1-L2"}


async def test_a_group_search_only_ever_sees_the_groups_own_memory(
    app: App, fake_openai: FakeOpenAI
) -> None:
    answer = await search(app, fake_openai, GROUP, query="violin recital Mia tickets band")

    assert cited(answer) == [f"{GROUP_DIR}/MEMORY.md#L1-L2"]
    assert "Mia" not in answer and "tickets" not in answer and "band" not in answer


async def test_the_owner_never_sees_a_groups_memory(app: App, fake_openai: FakeOpenAI) -> None:
    answer = await search(app, fake_openai, query="picnic chairs")

    assert answer == "No matches."


async def test_k_is_clamped_to_one_to_twenty(app: App, fake_openai: FakeOpenAI) -> None:
    one = await search(app, fake_openai, query="recital", k=0)
    many = await search(app, fake_openai, query="recital", k=500)

    assert len(cited(one)) == 1
    assert len(cited(many)) == 2


async def test_bad_arguments_are_answered_in_words(app: App, fake_openai: FakeOpenAI) -> None:
    assert await search(app, fake_openai, query="  ") == "error: `query` must not be empty"
    assert await search(app, fake_openai) == "error: `query` is required"
    assert await search(app, fake_openai, query="x", k="five") == "error: `k` must be an integer"
    assert (await search(app, fake_openai, query="x", scope="all")).startswith(
        "error: unknown argument 'scope'"
    )


async def test_the_prompt_holds_the_recall_contract_and_the_tools_are_offered(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))

    await say(app, "what did we decide?")

    request = fake_openai.requests[-1]
    assert CONTRACT in request["messages"][0]["content"]
    offered = {tool["function"]["name"] for tool in request["tools"]}
    assert offered >= {
        "current_time",
        "memory_search",
        "memory_get",
        "memory_add",
        "memory_update",
        "memory_promote",
        "memory_forget",
    }


async def test_with_recall_off_there_is_no_search_and_no_contract(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        workspace, telegram=None, openai=fake_openai, rag=RagSettings(enabled=False)
    )
    fake_openai.script(Reply("ok"))

    async with started_app(settings) as app:
        await say(app, "what did we decide?")

    request = fake_openai.requests[-1]
    assert "memory_search" not in request["messages"][0]["content"]
    offered = {tool["function"]["name"] for tool in request["tools"]}
    assert "memory_search" not in offered and "memory_get" in offered


async def test_a_finished_exchange_is_found_and_its_citation_is_no_file(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Noted: the marathon is on 3 May."))
    await say(app, "my marathon is on the third of May")

    answer = await search(app, fake_openai, query="marathon")
    citation = cited(answer)[0]
    fetched = await tool_result(app, fake_openai, "memory_get", {"path": citation})

    assert citation.startswith("sessions/telegram%3A1001#")
    assert "the marathon is on 3 May" in answer
    assert fetched.startswith("error: that citation is a past conversation, not a file")


async def test_an_added_item_is_found_by_its_own_citation(
    app: App, fake_openai: FakeOpenAI
) -> None:
    added = await tool_result(app, fake_openai, "memory_add", {"text": "Tom prefers oat milk"})
    item_id = added.split()[1]

    answer = await search(app, fake_openai, query="oat milk")

    assert cited(answer)[0].startswith(f"items/semantic.jsonl#{item_id}")


# ----------------------------------------------------------------------------- the tool alone


class BrokenIndex:
    def search(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        k: int,
        wait: Wait = "all",
        now: datetime | None = None,
    ) -> list[Hit]:
        raise sqlite3.OperationalError("database disk image is malformed")


class RecordingIndex:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...], int]] = []

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        k: int,
        wait: Wait = "all",
        now: datetime | None = None,
    ) -> list[Hit]:
        self.calls.append((query, tuple(scopes), k))
        return []


def call(query: str, **more: object) -> ToolCall:
    return ToolCall("call_1", "memory_search", json.dumps({"query": query, **more}))


async def test_a_failing_index_is_a_short_error_not_an_exception() -> None:
    tools = ToolRegistry([MemorySearch(BrokenIndex(), default_k=8)])

    answer = await tools.call(call("anything"), ToolContext(OWNER_KEY, GLOBAL_SCOPE))

    assert answer == "error: the memory index is not available right now"


async def test_the_scopes_come_from_the_chat_and_k_from_the_settings() -> None:
    index = RecordingIndex()
    tools = ToolRegistry([MemorySearch(index, default_k=8)])
    group = ToolContext(f"telegram:{GROUP}", GROUP_SCOPE)

    assert await tools.call(call("tea"), ToolContext(OWNER_KEY, GLOBAL_SCOPE)) == "No matches."
    await tools.call(call("tea", k=3), group)

    # twice k from the index: room to drop the hits a better one already shows (`overlap`)
    assert index.calls == [("tea", ("", OWNER_KEY), 16), ("tea", ("telegram:-100500",), 6)]


class FixedIndex:
    def __init__(self, hits: list[Hit]) -> None:
        self.hits = hits

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        k: int,
        wait: Wait = "all",
        now: datetime | None = None,
    ) -> list[Hit]:
        return self.hits[:k]


class FixedRemote:
    def __init__(self, hits: list[Hit]) -> None:
        self.hits = hits

    async def search(self, query: str, *, scopes: Sequence[str], k: int) -> list[Hit]:
        return self.hits[:k]


def hit(path: str, score: float, *, start: int = 1, kind: str = "note") -> Hit:
    at = datetime(2026, 11, 20, tzinfo=UTC)
    return Hit(path, start, start, f"text of {path}", score, kind, "", at)


async def test_lightrag_hits_join_the_index_hits_by_score() -> None:
    index = FixedIndex([hit("MEMORY.md", 0.0164), hit("2026-11-20.md", 0.0150)])
    remote = FixedRemote([hit("lightrag:exchange-1", 0.0160, start=0, kind="lightrag")])
    tool = MemorySearch(index, default_k=2, remote=remote)

    answer = await tool.run({"query": "tea"}, ToolContext(OWNER_KEY, GLOBAL_SCOPE))

    assert cited(answer) == ["MEMORY.md#L1-L1", "lightrag:exchange-1"]
    assert "(score 0.0160, kind lightrag, 2026-11-20)" in answer
