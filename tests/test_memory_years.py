"""A year of use: 400 days of notes keep the prompt's memory whole — MEMORY.md (under 12 KB),
Today's Notes and Recent Context — while old notes move to the archive, still found."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.fakes.openai_api import FakeOpenAI
from tests.harness import make_settings, started_app
from tests.talk import memory_section, prompt_of_turn, tool_result, write

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
