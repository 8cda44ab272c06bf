"""Log compaction: old daily notes folded into MEMORY.md and archived, per scope, once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from structlog.testing import capture_logs

from bot.app import App
from bot.memory.notes.long_term import LongTermMemory
from bot.memory.upkeep.archiving import NoteArchive
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import FakeOpenAI
from tests.harness import make_settings, started_app
from tests.talk import GROUP, GROUP_DIR, memory_section, prompt_of_turn, write

TODAY = datetime.now(UTC).date()  # the app's clock runs in UTC here
OLD = TODAY - timedelta(days=31)  # past the default retention of 30 days
OLDER = TODAY - timedelta(days=45)
KEPT = TODAY - timedelta(days=30)  # exactly 30 days old: not older than the retention
OLD_NOTE = (
    "[09:15] User: hello | Assistant: hi\n[21:40] User: I moved to Lisbon | Assistant: noted\n"
)


@asynccontextmanager
async def app_over(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    async with started_app(make_settings(workspace, telegram=None, openai=fake_openai)) as app:
        yield app


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def compaction(app: App) -> NoteArchive:
    [service] = [s for s in app.services if isinstance(s, NoteArchive)]
    return service


async def test_old_notes_are_folded_into_memory_and_archived_at_start(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    memory = workspace / "memory"
    write(
        workspace,
        "MEMORY.md",
        f"# About Ann\n- Ann likes tea.\n- {OLD} User: hello | Assistant: hi\n",
    )
    write(workspace, f"{OLD}.md", OLD_NOTE)
    write(
        workspace, f"{OLDER}.md", "[07:00] User: i MOVED to lisbon | Assistant: noted\nplain line\n"
    )
    write(workspace, f"{KEPT}.md", "[10:00] User: thirty days ago | Assistant: ok\n")
    recent = write(
        workspace, f"{TODAY - timedelta(days=2)}.md", "[10:00] User: recent | Assistant: ok\n"
    )

    async with app_over(workspace, fake_openai):
        assert (memory / "MEMORY.md").read_text() == (
            "# About Ann\n- Ann likes tea.\n"
            f"- {OLD} User: hello | Assistant: hi\n\n"  # already there: skipped
            "## Compacted memories\n"
            f"- {OLDER} User: i MOVED to lisbon | Assistant: noted\n"
            f"- {OLDER} plain line\n"
            f"- {OLD} User: I moved to Lisbon | Assistant: noted\n"
        )
        assert (memory / "archive" / f"{OLD}.md").read_text() == OLD_NOTE
        assert (memory / "archive" / f"{OLDER}.md").exists()
        assert not (memory / f"{OLD}.md").exists() and not (memory / f"{OLDER}.md").exists()
        assert (memory / f"{KEPT}.md").exists()
        assert recent.read_text() == "[10:00] User: recent | Assistant: ok\n"


async def test_a_second_run_changes_nothing(workspace: Path, fake_openai: FakeOpenAI) -> None:
    write(workspace, f"{OLD}.md", OLD_NOTE)
    write(workspace, f"{GROUP_DIR}/{OLD}.md", OLD_NOTE)
    async with app_over(workspace, fake_openai) as app:
        after_start = files(workspace / "memory")

        assert await compaction(app).run() == 0

        assert files(workspace / "memory") == after_start
    async with app_over(workspace, fake_openai):  # and at the next start
        assert files(workspace / "memory") == after_start
    assert "Compacted memories" in after_start["MEMORY.md"].decode()


async def test_each_chat_folds_into_its_own_memory_only(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    group = workspace / "memory" / GROUP_DIR
    write(workspace, f"{GROUP_DIR}/MEMORY.md", "# Group\n")
    write(
        workspace,
        f"{GROUP_DIR}/{OLD}.md",
        "[12:00] User: the group meets on Fridays | Assistant: ok\n",
    )

    async with app_over(workspace, fake_openai):
        assert (group / "MEMORY.md").read_text() == (
            "# Group\n\n## Compacted memories\n"
            f"- {OLD} User: the group meets on Fridays | Assistant: ok\n"
        )
        assert (group / "archive" / f"{OLD}.md").exists()
        assert not (workspace / "memory" / "MEMORY.md").exists()


async def test_compacted_lines_reach_the_prompt_as_long_term_memory(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    write(workspace, f"{GROUP_DIR}/{OLD}.md", "[12:00] User: we use Rust | Assistant: ok\n")

    async with app_over(workspace, fake_openai) as app:
        section = memory_section(await prompt_of_turn(app, fake_openai, chat=GROUP))

    assert section.startswith(
        "# Memory\n\n## Long-term Memory\n## Compacted memories\n"
        f"- {OLD} User: we use Rust | Assistant: ok"
    )


async def test_a_note_that_is_not_text_stays_where_it_is_untouched(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    broken = write(workspace, f"{OLDER}.md", b"\x00\x01binary\xff\xfe" * 100)
    write(workspace, f"{OLD}.md", OLD_NOTE)

    with capture_logs() as logs:
        async with app_over(workspace, fake_openai):
            pass

    assert broken.read_bytes() == b"\x00\x01binary\xff\xfe" * 100
    assert (workspace / "memory" / "archive" / f"{OLD}.md").exists()
    assert "binary" not in (workspace / "memory" / "MEMORY.md").read_text()
    [warning] = [e for e in logs if e["event"] == "log_compaction_skipped"]
    assert warning["reason"] == "note_not_text" and warning["log_level"] == "warning"


async def test_a_memory_file_that_is_not_text_is_never_rewritten(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    binary = bytes(range(256)) * 8
    memory = write(workspace, "MEMORY.md", binary)
    note = write(workspace, f"{OLD}.md", OLD_NOTE)
    write(workspace, f"{GROUP_DIR}/{OLD}.md", OLD_NOTE)

    with capture_logs() as logs:
        async with app_over(workspace, fake_openai):
            pass

    assert memory.read_bytes() == binary
    assert note.read_text() == OLD_NOTE  # not archived either: it was not folded
    assert (workspace / "memory" / GROUP_DIR / "archive" / f"{OLD}.md").exists()  # others go on
    assert any(e.get("reason") == "memory_not_text" for e in logs)


async def test_it_runs_daily_until_stopped(workspace: Path) -> None:
    root = Workspace(workspace)
    service = NoteArchive(
        root,
        LongTermMemory(root, FileLocks()),
        FileLocks(),
        retention_days=30,
        now=lambda: datetime.now(UTC),
        every=timedelta(seconds=0.05),
    )
    await service.start()
    try:
        write(workspace, f"{OLD}.md", OLD_NOTE)  # after the first run
        assert await archived_within(workspace, OLD, seconds=3)
    finally:
        await service.stop()
    write(workspace, f"{OLDER}.md", OLD_NOTE)

    assert not await archived_within(workspace, OLDER, seconds=0.3)


async def archived_within(workspace: Path, day: date, *, seconds: float) -> bool:
    path = workspace / "memory" / "archive" / f"{day}.md"
    for _ in range(int(seconds / 0.02)):
        if path.exists():
            return True
        await asyncio.sleep(0.02)
    return path.exists()
