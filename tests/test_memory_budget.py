"""The `# Memory` section's token budget: filled in priority order, never cut silently."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.app import App
from bot.llm.tokens import TokenCounter
from bot.settings import MemorySettings
from tests.fakes.openai_api import FakeOpenAI
from tests.harness import make_settings, started_app
from tests.talk import memory_section, prompt_of_turn, say, write

OMITTED = re.compile(
    r"\n\n\((\d+) more lines not shown: available via memory search and /memory\)$"
)
FACT = "- fact {:04d}: the quick brown fox jumps over the lazy dog"


def announced(section: str) -> int:
    """The omitted-lines count the section ends with (0 when it announces none)."""
    match = OMITTED.search(section)
    return int(match[1]) if match else 0


def tokens(text: str) -> int:
    return TokenCounter().count(text)


@pytest.fixture
async def small_budget_app(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    memory = MemorySettings(prompt_budget_tokens=300)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=memory)
    async with started_app(settings) as app:
        yield app


async def test_a_big_memory_file_is_cut_at_the_budget_and_the_cut_is_announced(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "\n".join(FACT.format(i) for i in range(2000)) + "\n")
    write(workspace, f"{app.now().date()}.md", "[08:00] User: today | Assistant: ok\n")

    section = memory_section(await prompt_of_turn(app, fake_openai))

    assert tokens(section) <= 3500
    shown = [line for line in section.splitlines() if line.startswith("- fact ")]
    assert shown == [FACT.format(i) for i in range(len(shown))]  # the top, contiguous
    assert len(shown) > 100
    assert announced(section) == 2000 - len(shown) + 1  # today's note did not fit either
    assert "## Today's Notes" not in section


async def test_todays_notes_keep_their_newest_lines(
    small_budget_app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    lines = [
        f"[{h:02d}:{m:02d}] User: question {h}.{m} | Assistant: answer"
        for h in range(10)
        for m in (0, 30)
    ]
    write(workspace, f"{small_budget_app.now().date()}.md", "\n".join(lines) + "\n")

    section = memory_section(await prompt_of_turn(small_budget_app, fake_openai))

    assert tokens(section) <= 300
    shown = section.split("## Today's Notes\n", 1)[1].split("\n\n")[0].splitlines()
    assert 0 < len(shown) < len(lines)
    assert shown == lines[-len(shown) :]
    assert announced(section) == len(lines) - len(shown)


async def test_priority_is_long_term_then_today_then_recent_days_newest_first(
    small_budget_app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    today = small_budget_app.now().date()
    write(workspace, "MEMORY.md", "Ann likes green tea.\n")
    write(workspace, f"{today}.md", "[09:00] User: today's question | Assistant: ok\n")
    for back in (1, 2, 3):
        day = today - timedelta(days=back)
        notes = [f"[1{i}:00] User: day {back} line {i} | Assistant: fine" for i in range(8)]
        write(workspace, f"{day}.md", "\n".join(notes) + "\n")

    section = memory_section(await prompt_of_turn(small_budget_app, fake_openai))

    assert tokens(section) <= 300
    assert section.index("Ann likes green tea.") < section.index("today's question")
    assert f"### {today - timedelta(days=1)}\n" in section
    assert "day 3 line" not in section  # the oldest day is the first to go
    shown = len(re.findall(r"User: day \d line", section))
    assert announced(section) == 24 - shown


@pytest.mark.parametrize("budget", [120, 400, 1000, 3500])
async def test_the_section_fits_any_budget_and_counts_every_line(
    workspace: Path, fake_openai: FakeOpenAI, budget: int
) -> None:
    memory = MemorySettings(prompt_budget_tokens=budget)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=memory)
    write(workspace, "MEMORY.md", "# Facts\n\n" + "\n".join(FACT.format(i) for i in range(300)))
    async with started_app(settings) as app:
        today = app.now().date()
        for back in range(4):
            notes = [f"[10:{i:02d}] User: d{back} n{i} | Assistant: ok" for i in range(40)]
            write(workspace, f"{today - timedelta(days=back)}.md", "\n".join(notes) + "\n")

        section = memory_section(await prompt_of_turn(app, fake_openai))

    assert tokens(section) <= budget
    shown = len(re.findall(r"^(- fact|\[10:|# Facts)", section, flags=re.MULTILINE))
    assert shown + announced(section) == 1 + 300 + 4 * 40


async def test_memory_command_reports_the_same_omitted_count_as_the_prompt(
    small_budget_app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "\n".join(FACT.format(i) for i in range(50)) + "\n")
    [report] = await say(small_budget_app, "/memory")

    section = memory_section(await prompt_of_turn(small_budget_app, fake_openai))  # sees the same

    assert announced(section) > 0
    assert f"Prompt: {announced(section)} lines left out (budget 300 tokens" in report


async def test_when_everything_fits_nothing_is_announced(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "\n".join(FACT.format(i) for i in range(20)) + "\n")

    section = memory_section(await prompt_of_turn(app, fake_openai))

    assert section.count("- fact ") == 20
    assert "more lines not shown" not in section
