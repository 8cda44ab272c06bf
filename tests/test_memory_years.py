"""A year of use: 400 days of notes keep the prompt's memory whole — MEMORY.md (under 12 KB),
Today's Notes and Recent Context — while old notes move to the archive, still found; at a small
window a question naming a recent day finds that day's note."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.settings import CompactionSettings
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import make_settings, models_file, started_app
from tests.talk import (
    memory_section,
    prompt_of_turn,
    relevant_section,
    say,
    system_text,
    tool_result,
    write,
)

DAYS = 400
LINES_A_DAY = 20
MEMORY_MD = "# About me\n" + "".join(
    f"- Fact {n}: I keep a note about topic {n}.\n" for n in range(150)
)


def write_notes(workspace: Path) -> None:
    today = datetime.now(UTC).date()  # the app's clock runs in UTC here
    for back in range(DAYS):
        day = today - timedelta(days=back)
        lines = [
            f"[{9 + n // 4:02d}:{n % 4 * 15:02d}] User: day {back} question {n} about chores"
            f" | Assistant: answer {n} for day {back}"
            for n in range(LINES_A_DAY)
        ]
        if back == 300:
            lines[5] = "[10:15] User: the attic ladder code is 8846 | Assistant: noted"
        write(workspace, f"{day}.md", "\n".join(lines) + "\n")


async def test_a_year_of_notes_keeps_the_prompts_memory_whole(
    fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", MEMORY_MD)
    write_notes(workspace)

    async with started_app(make_settings(workspace, telegram=None, openai=fake_openai)) as app:
        section = memory_section(await prompt_of_turn(app, fake_openai))
        found = await tool_result(app, fake_openai, "memory_search", {"query": "attic ladder"})

    assert "## Long-term Memory" in section and "- Fact 149:" in section
    assert "## Today's Notes" in section and "day 0 question 19" in section
    assert "## Recent Context" in section and "day 1 question" in section
    memory = workspace / "memory"
    assert (memory / "MEMORY.md").stat().st_size < 12 * 1024
    assert len(list(memory.glob("????-??-??.md"))) == 31  # today and the retention period
    assert len(list((memory / "archive").glob("*.md"))) == DAYS - 31
    assert "8846" in found and "archive/" in found


async def test_at_an_8k_window_a_question_naming_yesterday_finds_its_note(
    fake_openai: FakeOpenAI, workspace: Path, tmp_path: Path
) -> None:
    """A year of notes, a busy today that fills the window's `# Memory` and a long MEMORY.md:
    yesterday is out of the recent notes, and a question naming it still finds its note."""
    write(workspace, "MEMORY.md", MEMORY_MD)
    write_notes(workspace)
    today = datetime.now(UTC).date()
    yesterday = today - timedelta(days=1)
    said = [
        f"[{9 + n // 4:02d}:{n % 4 * 15:02d}] User: day 1 question {n} about chores"
        f" | Assistant: answer {n} for day 1"
        for n in range(LINES_A_DAY)
    ]
    said[7] = "[10:45] User: the plumber comes on Thursday at noon | Assistant: noted"
    write(workspace, f"{yesterday}.md", "\n".join(said) + "\n")
    busy = [
        f"[{8 + n // 6:02d}:{n % 6 * 10:02d}] User: today's errand {n} about the garden"
        f" | Assistant: done {n}"
        for n in range(80)
    ]
    write(workspace, f"{today}.md", "\n".join(busy) + "\n")
    compaction = CompactionSettings(models_file=models_file(tmp_path, window=8192))
    settings = make_settings(workspace, telegram=None, openai=fake_openai, compaction=compaction)

    async with started_app(settings) as app:
        prompts = []
        for question in (
            "what did I tell you yesterday about the plumber?",
            "what did we talk about yesterday?",
        ):
            fake_openai.script(Reply("ok"))
            assert await say(app, question) == ["ok"]
            prompts.append(system_text(fake_openai.requests[-1]))

    plumber, day = prompts
    assert "## Recent Context" not in memory_section(plumber)  # the window's room is full
    assert "the plumber comes on Thursday at noon" in relevant_section(plumber)
    assert f"## {yesterday}" in relevant_section(day)
    assert "day 1 question" in relevant_section(day)
