"""Bad memory files: a logged warning and a working bot, and no file truncated or lost."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.app import App
from bot.llm.tokens import TokenCounter
from tests.fakes.openai_api import FakeOpenAI
from tests.talk import memory_section, prompt_of_turn, say, write

NUL_BYTES = b"\x00\x01\x02PNG\x89\xff" * 200
UNDECODABLE = bytes(range(0x80, 0x100)) * 20  # no NUL, but hardly a character of UTF-8
UTF_16 = ("Ann likes green tea.\n" * 40).encode("utf-16")  # NUL bytes, else mostly decodable


@pytest.mark.parametrize(
    "content", [NUL_BYTES, UTF_16, UNDECODABLE], ids=["binary", "utf-16", "undecodable"]
)
async def test_a_memory_file_that_is_not_text_is_skipped_with_a_warning_and_never_changed(
    app: App, fake_openai: FakeOpenAI, workspace: Path, content: bytes
) -> None:
    memory = write(workspace, "MEMORY.md", content)
    write(workspace, f"{app.now().date()}.md", "[08:00] User: still here | Assistant: ok\n")

    with capture_logs() as logs:
        first = await prompt_of_turn(app, fake_openai)
        second = await prompt_of_turn(app, fake_openai)
    replies = [
        *await say(app, "/remember something new"),
        *await say(app, "/forget tea"),
    ]

    for prompt in (first, second):
        assert "## Long-term Memory" not in prompt
        assert "[08:00] User: still here" in prompt
    warnings = [e for e in logs if e["event"] == "memory_file_not_text"]
    assert len(warnings) == 1  # once per version of the file, not once per turn
    assert warnings[0]["log_level"] == "warning" and warnings[0]["path"] == str(memory)
    assert replies[0].startswith("MEMORY.md is not readable as text, so I left it alone.")
    assert replies[1].endswith("Left alone (not text): MEMORY.md")
    assert memory.read_bytes() == content


async def test_a_stray_bad_byte_does_not_hide_the_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", b"Ann lives in M\xfcnchen.\nShe likes tea.\n")

    section = memory_section(await prompt_of_turn(app, fake_openai))

    assert section == "# Memory\n\n## Long-term Memory\nAnn lives in M\ufffdnchen.\nShe likes tea."


async def test_a_damaged_recent_note_is_skipped_and_the_other_days_are_shown(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    today = app.now().date()
    broken = write(workspace, f"{today - timedelta(days=1)}.md", NUL_BYTES)
    write(
        workspace, f"{today - timedelta(days=2)}.md", "[10:00] User: two days ago | Assistant: ok\n"
    )

    section = memory_section(await prompt_of_turn(app, fake_openai))

    assert section == (
        "# Memory\n\n## Recent Context\n"
        f"### {today - timedelta(days=2)}\n[10:00] User: two days ago | Assistant: ok"
    )
    assert broken.read_bytes() == NUL_BYTES


async def test_the_memory_folder_deleted_while_running(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "Ann likes tea.\n")
    assert "Ann likes tea." in await prompt_of_turn(app, fake_openai)
    shutil.rmtree(workspace / "memory")

    prompt = await prompt_of_turn(app, fake_openai)
    [report] = await say(app, "/memory")
    [saved] = await say(app, "/remember Ann moved to Lisbon")

    assert "# Memory" not in prompt
    note = (workspace / "memory" / f"{app.now().date()}.md").read_text()
    assert "User: what do you know? | Assistant: ok" in note  # recreated on the next write
    assert report.startswith("Memory: global (your private memory)\nMEMORY.md: none\n")
    assert saved == "Saved to memory: Ann moved to Lisbon"
    assert "Ann moved to Lisbon" in (workspace / "memory" / "MEMORY.md").read_text()


async def test_a_five_megabyte_note_keeps_the_prompt_within_budget(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    lines = [
        f"[{i % 24:02d}:{i % 60:02d}] User: message {i} | Assistant: answer {i}"
        for i in range(110_000)
    ]
    note = write(workspace, f"{app.now().date()}.md", "\n".join(lines) + "\n")
    assert note.stat().st_size > 5_000_000

    section = memory_section(await prompt_of_turn(app, fake_openai))  # timed: benchmarks/big_files

    assert TokenCounter().count(section) <= 3500
    shown = section.split("## Today's Notes\n", 1)[1].split("\n\n")[0].splitlines()
    assert shown == lines[-len(shown) :]  # the newest lines
    assert f"\n\n({len(lines) - len(shown)} more lines not shown: " in section
    assert note.read_text().startswith("\n".join(lines) + "\n")  # appended to, never cut


async def test_unreadable_memory_files_are_skipped_with_a_warning(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    (workspace / "memory" / "MEMORY.md").mkdir(parents=True)  # a folder where a file should be
    yesterday = app.now().date() - timedelta(days=1)
    write(workspace, f"{yesterday}.md", "[10:00] User: yesterday | Assistant: ok\n")

    with capture_logs() as logs:
        section = memory_section(await prompt_of_turn(app, fake_openai))
    [report] = await say(app, "/memory")

    recent = f"### {yesterday}\n[10:00] User: yesterday | Assistant: ok"
    assert section == f"# Memory\n\n## Recent Context\n{recent}"
    [warning] = [e for e in logs if e["event"] == "memory_file_unreadable"]
    assert warning["error"] == "IsADirectoryError" and warning["log_level"] == "warning"
    assert "not readable as text" in report
    assert (workspace / "memory" / "MEMORY.md").is_dir()
