"""Archiving old notes: daily notes past retention move to the archive, per scope, once;
nothing is folded into MEMORY.md, and archived notes stay searchable."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from structlog.testing import capture_logs

from bot.app import App
from bot.memory.upkeep.archiving import NoteArchive, archive_notes
from bot.models import MemoryScope
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import FakeOpenAI
from tests.harness import make_settings, started_app
from tests.talk import GROUP_DIR, memory_section, prompt_of_turn, tool_result, write

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


def archiving(app: App) -> NoteArchive:
    [service] = [s for s in app.services if isinstance(s, NoteArchive)]
    return service


async def test_old_notes_are_archived_at_start_and_memory_is_left_alone(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    memory = workspace / "memory"
    write(workspace, "MEMORY.md", "# About Ann\n- Ann likes tea.\n")
    write(workspace, f"{OLD}.md", OLD_NOTE)
    write(workspace, f"{OLDER}.md", "[07:00] User: i MOVED to lisbon | Assistant: noted\n")
    write(workspace, f"{KEPT}.md", "[10:00] User: thirty days ago | Assistant: ok\n")
    write(workspace, f"archive/{OLDER}.md", "an older archive of the same day\n")

    async with app_over(workspace, fake_openai):
        assert (memory / "MEMORY.md").read_text() == "# About Ann\n- Ann likes tea.\n"
        assert (memory / "archive" / f"{OLD}.md").read_text() == OLD_NOTE
        assert (
            memory / "archive" / f"{OLDER}.md"
        ).read_text() == "an older archive of the same day\n"
        assert "lisbon" in (memory / "archive" / f"{OLDER}.1.md").read_text()  # never over a file
        assert not (memory / f"{OLD}.md").exists() and not (memory / f"{OLDER}.md").exists()
        assert (memory / f"{KEPT}.md").exists()


async def test_a_second_run_changes_nothing(workspace: Path, fake_openai: FakeOpenAI) -> None:
    write(workspace, f"{OLD}.md", OLD_NOTE)
    write(workspace, f"{GROUP_DIR}/{OLD}.md", OLD_NOTE)
    async with app_over(workspace, fake_openai) as app:
        after_start = files(workspace / "memory")

        assert await archiving(app).run() == 0

        assert files(workspace / "memory") == after_start
    assert f"archive/{OLD}.md" in after_start and f"{GROUP_DIR}/archive/{OLD}.md" in after_start
    assert "MEMORY.md" not in after_start


async def test_each_chat_archives_into_its_own_folder_only(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    group = workspace / "memory" / GROUP_DIR
    write(workspace, f"{GROUP_DIR}/{OLD}.md", "[12:00] User: we meet on Fridays | Assistant: ok\n")

    async with app_over(workspace, fake_openai):
        assert (group / "archive" / f"{OLD}.md").exists()
        assert not (workspace / "memory" / "archive").exists()


async def test_an_archived_note_leaves_the_prompt_and_stays_searchable(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    write(workspace, f"{OLD}.md", "[21:40] User: the gate code is 7319 | Assistant: noted\n")

    async with app_over(workspace, fake_openai) as app:
        section = memory_section(await prompt_of_turn(app, fake_openai))
        found = await tool_result(app, fake_openai, "memory_search", {"query": "gate code"})

    assert "7319" not in section
    assert f"archive/{OLD}.md#L1-L1" in found and "7319" in found


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
    [warning] = [e for e in logs if e["event"] == "note_archive_skipped"]
    assert warning["reason"] == "not_text" and warning["log_level"] == "warning"


async def test_it_runs_daily_until_stopped(workspace: Path) -> None:
    root = Workspace(workspace)
    mover = Mover(root)
    service = NoteArchive(
        mover,
        root,
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


class Mover:
    """Moves notes as the writer does, without an index to follow."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def archive_notes(self, scope: MemoryScope, *, before: date) -> int:
        return await archive_notes(self.workspace, FileLocks(), scope, before=before)


async def archived_within(workspace: Path, day: date, *, seconds: float) -> bool:
    path = workspace / "memory" / "archive" / f"{day}.md"
    for _ in range(int(seconds / 0.02)):
        if path.exists():
            return True
        await asyncio.sleep(0.02)
    return path.exists()
