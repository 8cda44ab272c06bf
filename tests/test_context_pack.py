"""System 20's memory: the markdown section (`# Memory`, system prompt), the memory pack scored
for the message (`# Memory for this message`), `# Relevant Memory`, nothing twice, and every
budget."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import structlog

from bot import logs
from bot.index import MemoryIndex
from bot.index.service import IndexService
from bot.llm.meter import memory_room
from bot.llm.tokens import TokenCounter
from bot.memory.items.keeper import ItemKeeper
from bot.memory.items.store import ItemStore
from bot.memory.notes.working import WorkingMemory
from bot.memory.recall.markdown import MarkdownMemory
from bot.memory.recall.prompt import MemoryPrompt, PackLimits, PromptMemory, relevant_budget
from bot.memory.recall.relevant import RelevantMemory, notes_line
from bot.memory.recall.retrieval import MemoryRetriever
from bot.memory.recall.scoring import TopK
from bot.models import GLOBAL_SCOPE, MemoryLayer
from bot.settings import ItemSettings, MemorySettings, RagSettings
from bot.storage.files import FileLocks
from bot.storage.lines import LineReader
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import make_settings, started_app
from tests.talk import (
    memory_section,
    new_conversation,
    relevant_section,
    say,
    system_text,
    write,
)

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=ZoneInfo("Europe/Berlin"))
KEY = "telegram:1001"
COUNT = TokenCounter().count
MORE = re.compile(r"\((\d+) more via memory_search\)$")


@dataclass
class Parts:
    workspace: Workspace
    writer: ItemKeeper
    index: IndexService

    def prompt(
        self,
        *,
        budget: int = 3500,
        limits: PackLimits | None = None,
        relevant: tuple[int, int] | None = None,  # (k, budget tokens)
        count: Callable[[str], int] = COUNT,
        with_pack: bool = True,
    ) -> MemoryPrompt:
        store = ItemStore(self.workspace, FileLocks())
        working = WorkingMemory(self.workspace, FileLocks(), stale_days=7, now=lambda: NOW)
        markdown = MarkdownMemory(
            self.workspace, LineReader(), working, COUNT, recent_days=3, budget_tokens=budget
        )
        retriever = MemoryRetriever(store, count, now=lambda: NOW)
        k, tokens = relevant or (0, 0)
        return MemoryPrompt(
            markdown,
            retriever=retriever if with_pack else None,
            relevant=RelevantMemory(self.index, COUNT, k=k, budget_tokens=tokens),
            limits=limits,
        )

    @property
    def open_index(self) -> MemoryIndex:
        """The index the fixture started."""
        index = self.index.current
        assert index is not None
        return index

    async def add(self, layer: MemoryLayer, text: str, **fields: float | str) -> None:
        await self.writer.add(GLOBAL_SCOPE, layer, text, **fields)  # type: ignore[arg-type]


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[Parts]:
    workspace = Workspace(tmp_path / "ws")
    workspace.ensure()
    writer = ItemKeeper(ItemStore(workspace, FileLocks()), now=lambda: NOW)
    index = IndexService(lambda: MemoryIndex(workspace.memory_root, workspace.index_dir))
    await index.start()
    yield Parts(workspace, writer, index)
    await index.stop()


async def sections(prompt: MemoryPrompt, query: str = "tea") -> PromptMemory:
    return await prompt.sections(GLOBAL_SCOPE, KEY, query, NOW)


def note(root: Path, text: str, days_back: int = 0) -> None:
    write(root, f"{(NOW.date() - timedelta(days=days_back)).isoformat()}.md", text)


# ----------------------------------------------------------------------------- the two parts


async def test_without_items_the_section_is_exactly_the_markdown_one(parts: Parts) -> None:
    root = parts.workspace.root
    write(root, "MEMORY.md", "# Pets\nThe cat is called Pixel.\n")
    note(root, "[08:00] User: tea? | Assistant: Green tea.\n")
    note(root, "[20:00] User: yesterday | Assistant: ok\n", days_back=1)

    found = await sections(parts.prompt())
    markdown = await sections(parts.prompt(with_pack=False))

    assert found.memory == markdown.memory
    assert found.memory.startswith("# Memory\n\n## Long-term Memory\n# Pets\n")
    assert found.items == () and found.recalled == ""


async def test_items_are_recalled_for_the_message_under_their_own_headings(
    parts: Parts,
) -> None:
    await parts.add(MemoryLayer.SEMANTIC, "Ann drinks green tea.")
    await parts.add(MemoryLayer.PROCEDURAL, "make test", type="command")

    found = await sections(parts.prompt())

    assert found.memory == ""
    assert found.recalled == (
        "# Memory for this message\n\n## Remembered Facts\n- Ann drinks green tea.\n\n"
        "## Procedures\n- command: `make test`"
    )
    assert [item.text for item in found.items] == ["Ann drinks green tea.", "make test"]


async def test_markdown_and_items_each_end_with_their_own_notice(parts: Parts) -> None:
    root = parts.workspace.root
    write(root, "MEMORY.md", "".join(f"- Fact {n} about the shed.\n" for n in range(40)))
    for n in range(12):
        await parts.add(MemoryLayer.SEMANTIC, f"Ann's tea number {n} is a green tea.")
    limits = PackLimits(top_k=TopK(semantic=12), soft_budget_tokens=80, max_budget_tokens=80)

    found = await sections(parts.prompt(budget=150, limits=limits))

    assert found.memory.startswith("# Memory\n\n## Long-term Memory\n- Fact 0 about the shed.")
    assert re.search(r"\n\n\(\d+ more lines not shown: [^)]*\)$", found.memory)
    head, facts = found.recalled.split("\n\n## Remembered Facts\n")
    assert head == "# Memory for this message"
    notice = re.search(r"\n\n\((\d+) more memory items not shown: [^)]*\)$", facts)
    assert notice
    assert int(notice[1]) + facts.count("- Ann's tea number") == 12


async def test_an_item_repeating_a_shown_line_is_left_out(parts: Parts) -> None:
    root = parts.workspace.root
    write(root, "MEMORY.md", "## Remembered\n- Ann likes green tea\n")
    note(root, "[08:00] User: pip? | Assistant: ```bash pip install rich ```\n")
    await parts.add(MemoryLayer.SEMANTIC, "Ann likes green tea.")
    await parts.add(MemoryLayer.SEMANTIC, "Bob likes black tea.")
    await parts.add(MemoryLayer.EPISODIC, "User: pip? | Assistant: pip install rich", type="turn")

    found = await sections(parts.prompt())

    assert found.memory.count("likes green tea") == 1
    assert "green tea" not in found.recalled
    assert "## Remembered Facts\n- Bob likes black tea." in found.recalled
    assert "Earlier Episodes" not in found.recalled  # the turn is today's note, fences aside
    assert [item.text for item in found.items] == ["Bob likes black tea."]


async def test_a_failing_pack_falls_back_to_the_markdown_section(parts: Parts) -> None:
    write(parts.workspace.root, "MEMORY.md", "The cat is called Pixel.\n")
    await parts.add(MemoryLayer.SEMANTIC, "Ann likes green tea.")

    def broken_tokenizer(text: str) -> int:
        raise RuntimeError("the tokenizer is gone")

    found = await sections(parts.prompt(count=broken_tokenizer))

    assert found.memory == "# Memory\n\n## Long-term Memory\nThe cat is called Pixel."
    assert found.items == () and found.recalled == ""


# ----------------------------------------------------------------------------- budgets


async def test_the_pack_keeps_to_its_soft_budget(parts: Parts) -> None:
    for n in range(30):
        await parts.add(MemoryLayer.SEMANTIC, f"Garden fact {n}: the shed roof needs tar paper.")
    limits = PackLimits(top_k=TopK(semantic=30), soft_budget_tokens=120, max_budget_tokens=400)

    text = (await sections(parts.prompt(limits=limits), query="")).recalled

    assert COUNT(text) <= 120
    assert text.endswith("more memory items not shown: available via memory search)")


async def test_the_pack_says_in_the_log_what_it_offered_showed_and_left_out(
    parts: Parts,
) -> None:
    for n in range(30):
        await parts.add(MemoryLayer.SEMANTIC, f"Garden fact {n}: the shed roof needs tar paper.")
    limits = PackLimits(top_k=TopK(semantic=30), soft_budget_tokens=120, max_budget_tokens=400)

    with structlog.testing.capture_logs() as captured:
        text = (await sections(parts.prompt(limits=limits), query="")).recalled

    [line] = [e for e in captured if e["event"] == "memory_pack"]
    shown = text.count("Garden fact")
    assert line["offered"]["semantic"] == 30
    assert (line["shown"], line["left_out"]) == (shown, 30 - shown)
    assert 0 < line["tokens"] <= 120
    assert line["budget"] == (120, 400)


async def test_relevant_memory_keeps_to_k_and_its_budget_and_counts_the_rest(
    parts: Parts,
) -> None:
    for n in range(10):
        note(
            parts.workspace.root,
            f"[08:00] User: kayak trip {n} on the lake | Assistant: ok\n",
            20 + n,
        )
    parts.open_index.sync_files()

    few = relevant_lines((await sections(parts.prompt(relevant=(4, 800)), "kayak")).relevant)
    one = relevant_lines((await sections(parts.prompt(relevant=(1, 800)), "kayak")).relevant)
    tight = (await sections(parts.prompt(relevant=(10, 80)), "kayak")).relevant

    assert len(few.hits) == 4 and few.more == 4  # only 2 × k are looked for
    assert len(one.hits) == 1 and one.more == 1
    assert all(re.fullmatch(r"- \[L1-L1\] User: kayak .*", h) for h in few.hits)
    assert len(few.days) == 4 and all(re.fullmatch(r"## \d{4}-\d\d-\d\d", d) for d in few.days)
    assert COUNT(tight) <= 80
    assert relevant_lines(tight).more == 10 - len(relevant_lines(tight).hits) > 0


async def test_a_small_room_gives_relevant_memory_what_the_other_sections_leave(
    parts: Parts,
) -> None:
    """200 tokens for all three: its share is ~26, but `# Memory` and the items show nothing,
    so their room is the evidence's; with a MEMORY.md to show, less is left for it."""
    for n in range(10):
        note(
            parts.workspace.root,
            f"[08:00] User: kayak trip {n} on the lake | Assistant: ok\n",
            20 + n,
        )
    parts.open_index.sync_files()
    prompt = parts.prompt(relevant=(10, 800))

    empty = await prompt.sections(GLOBAL_SCOPE, KEY, "kayak", NOW, room=200)
    write(parts.workspace.root, "MEMORY.md", "".join(f"- Fact {n}: a boat.\n" for n in range(30)))
    shared = await prompt.sections(GLOBAL_SCOPE, KEY, "kayak", NOW, room=200)

    assert empty.memory == "" and len(relevant_lines(empty.relevant).hits) >= 5
    assert COUNT(empty.relevant) <= 200
    assert shared.memory and COUNT(shared.memory) + COUNT(shared.relevant) <= 200 + 2
    assert len(relevant_lines(shared.relevant).hits) < len(relevant_lines(empty.relevant).hits)


async def test_at_a_32k_room_the_items_give_way_to_the_evidence(parts: Parts) -> None:
    """5,840 tokens for all three, each with more to show: `# Memory` keeps its share (its
    prefix, a year of notes' recent days), the items at most a tenth, `# Relevant Memory` its
    ~2,000 tokens and what the other two leave."""
    root = parts.workspace.root
    write(root, "MEMORY.md", "".join(f"- Fact {n}: the kayak is stored.\n" for n in range(400)))
    for n in range(300):
        what = "paddles" if n % 3 else "the weather"
        note(root, f"[08:00] User: what about {what} at lake {n}? | Assistant: fine {n}\n", 20 + n)
    long = " ".join(f"word{w}" for w in range(80))  # ~100 tokens an item
    for n in range(30):
        await parts.add(MemoryLayer.SEMANTIC, f"Paddles fact number {n} about the shed: {long}")
        await parts.add(MemoryLayer.EPISODIC, f"Paddles trip number {n} to the lake: {long}")
    parts.open_index.sync_files()
    prompt = parts.prompt(relevant=(100, 4096))

    found = await prompt.sections(GLOBAL_SCOPE, KEY, "paddles at the lake", NOW, room=5840)

    assert 2800 <= COUNT(found.memory) <= 0.55 * 5840
    assert 0 < COUNT(found.recalled) <= 0.10 * 5840 * 3500 / 1800  # its max: high scores
    assert COUNT(found.relevant) >= 0.35 * 5840 - 150


async def test_relevant_memory_skips_what_memory_already_shows(parts: Parts) -> None:
    write(parts.workspace.root, "MEMORY.md", "# Boat\nThe kayak is blue.\n")
    note(parts.workspace.root, "[08:00] User: kayak paddles? | Assistant: In the shed.\n", 30)
    parts.open_index.sync_files()

    found = await sections(parts.prompt(relevant=(5, 800)), "kayak")

    assert "The kayak is blue." in found.memory
    assert found.relevant.startswith(f"# Relevant Memory\n{notes_line('')}\n## ")
    assert "kayak paddles" in found.relevant and "The kayak is blue" not in found.relevant


async def test_no_index_means_no_relevant_section(parts: Parts) -> None:
    note(parts.workspace.root, "[08:00] User: kayak | Assistant: ok\n", 30)
    await parts.index.stop()  # closed: nothing is open any more

    found = await sections(parts.prompt(relevant=(5, 800)), "kayak")

    assert found.relevant == ""


async def test_a_broken_index_means_no_relevant_section_and_a_log_line(parts: Parts) -> None:
    note(parts.workspace.root, "[08:00] User: kayak | Assistant: ok\n", 30)
    parts.open_index.sync_files()
    parts.open_index.store.close()  # the file went away under it

    buffer = io.StringIO()
    logs.configure(fmt="json", level="INFO", stream=buffer)
    try:
        found = await sections(parts.prompt(relevant=(5, 800)), "kayak")
    finally:
        logging.getLogger().handlers.clear()
        structlog.reset_defaults()

    assert found.relevant == ""
    assert '"event": "relevant_memory_failed"' in buffer.getvalue()


@dataclass(frozen=True)
class Lines:
    hits: list[str]
    more: int
    days: list[str]  # the `## <day>` headings


def relevant_lines(section: str) -> Lines:
    lines = section.splitlines()
    assert lines[0] == "# Relevant Memory"
    more = MORE.search(lines[-1])
    return Lines(
        [line for line in lines[1:] if line.startswith("- ")],
        int(more[1]) if more else 0,
        [line for line in lines[1:] if line.startswith("## ")],
    )


# ----------------------------------------------------------------------------- the running bot


async def test_the_bots_prompt_holds_both_sections_within_the_settings_budgets(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    write(workspace, "MEMORY.md", "".join(f"- Fact {n}: the kayak is stored.\n" for n in range(80)))
    today = datetime.now(UTC).date()
    for days in range(9, 30):
        write(
            workspace,
            f"{today - timedelta(days=days)}.md",
            f"[08:00] User: kayak trip {days} | Assistant: ok\n",
        )
    memory = MemorySettings(
        prompt_budget_tokens=300, items=ItemSettings(soft_budget_tokens=100, max_budget_tokens=100)
    )
    rag = RagSettings(relevant_k=4, relevant_budget_tokens=120)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=memory, rag=rag)
    async with started_app(settings) as app:
        fake_openai.script(Reply("ok"), Reply("ok"))
        await say(app, "I prefer kayaks over canoes.")
        new_conversation(workspace)
        await say(app, "kayak?")
        prompt = str(system_text(fake_openai.requests[-1]))

    section, relevant = memory_section(prompt), relevant_section(prompt)
    markdown, _, items = section.partition("\n\n# Memory for this message\n")
    assert COUNT(markdown) <= 300
    assert "## Earlier Episodes" in items and COUNT(items) <= 100 + 10
    assert COUNT(relevant.strip()) <= 120
    assert relevant_lines(relevant.strip()).more > 0


def test_relevant_memory_is_given_by_the_window_and_keeps_its_share_of_a_small_one() -> None:
    """4,096 tokens at a large window; below, its share of the room (~2,000 at 32k, where the
    items give way); never over the setting."""
    large, middle, small = (
        relevant_budget(memory_room(window, tools=1200), most=4096)
        for window in (131_072, 32_768, 8_192)
    )
    assert large == 4096
    assert 2000 < middle < 2100  # 0.35 of ~5,840 tokens of room
    assert 100 < small < 200  # ~460 tokens for all three
    assert relevant_budget(None, most=4096) == 4096
    assert relevant_budget(30_000, most=800) == 800


async def test_relevant_memory_reads_a_named_time_against_the_message_moment(
    parts: Parts,
) -> None:
    """ "last May" is the May before the message's moment, not the wall clock's."""
    write(parts.workspace.root, "2025-05-12.md", "[10:00] User: tea plans? | Assistant: Oolong.\n")
    write(parts.workspace.root, "2026-05-12.md", "[10:00] User: tea plans? | Assistant: Sencha.\n")
    parts.open_index.sync_files()
    prompt = parts.prompt(relevant=(1, 800))
    query = "what were the tea plans last May?"

    moments = (datetime(2025, 6, 10, 9, tzinfo=UTC), datetime(2026, 6, 10, 9, tzinfo=UTC))
    found = [await prompt.sections(GLOBAL_SCOPE, KEY, query, moment) for moment in moments]

    assert found[0].relevant.splitlines()[1:4] == [
        notes_line(""),
        "## 2025-05-12",
        "- [L1-L1] User: tea plans? | Assistant: Oolong.",
    ]
    assert found[1].relevant.splitlines()[1:4] == [
        notes_line(""),
        "## 2026-05-12",
        "- [L1-L1] User: tea plans? | Assistant: Sencha.",
    ]
