"""Working memory: replaced on write, read with its age, ignored (never deleted) once stale,
shown in the prompt up to `memory.items.working_top_k` lines."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.memory.notes.working import WorkingMemory, WorkingNote, age_phrase
from bot.settings import ItemSettings, MemorySettings
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import FakeOpenAI
from tests.harness import OWNER, make_settings, started_app
from tests.talk import memory_section, prompt_of_turn

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=ZoneInfo("Europe/Berlin"))
KEY = "telegram:-100123:7"


def working_memory(root: Path, *, stale_days: int = 7) -> WorkingMemory:
    return WorkingMemory(Workspace(root), FileLocks(), stale_days=stale_days, now=lambda: NOW)


def set_age(path: Path, age: timedelta) -> None:
    moment = (NOW - age).timestamp()
    os.utime(path, (moment, moment))


async def test_write_creates_the_file_under_the_encoded_session_key(tmp_path: Path) -> None:
    memory = working_memory(tmp_path)

    await memory.write(KEY, "  - Topic: tea\n- Pending: trip\n\n")

    path = tmp_path / "memory" / "working" / "telegram%3A-100123%3A7.md"
    assert path.read_text() == "- Topic: tea\n- Pending: trip\n"
    assert path.stat().st_mode & 0o777 == 0o600


async def test_a_write_replaces_the_previous_snapshot(tmp_path: Path) -> None:
    memory = working_memory(tmp_path)
    await memory.write(KEY, "first snapshot, a long one")

    await memory.write(KEY, "second")

    assert Workspace(tmp_path).working_memory_path(KEY).read_text() == "second\n"


async def test_read_fresh_gives_text_time_and_age(tmp_path: Path) -> None:
    memory = working_memory(tmp_path)
    await memory.write(KEY, "- Topic: tea")
    set_age(Workspace(tmp_path).working_memory_path(KEY), timedelta(hours=2, minutes=5))

    note = memory.read_fresh(KEY)

    assert note == WorkingNote(
        text="- Topic: tea",
        updated_at=NOW - timedelta(hours=2, minutes=5),
        age="updated today at 07:25",
    )
    assert note.updated_at.tzinfo == NOW.tzinfo


def test_nothing_written_reads_as_none(tmp_path: Path) -> None:
    assert working_memory(tmp_path).read_fresh(KEY) is None


async def test_an_emptied_file_reads_as_none(tmp_path: Path) -> None:
    memory = working_memory(tmp_path)
    await memory.write(KEY, "something")
    Workspace(tmp_path).working_memory_path(KEY).write_text(" \n\n")

    assert memory.read_fresh(KEY) is None


@pytest.mark.parametrize(
    ("age", "fresh"),
    [
        (timedelta(days=6, hours=23), True),
        (timedelta(days=7), True),
        (timedelta(days=7, minutes=1), False),
        (timedelta(days=30), False),
    ],
)
async def test_a_snapshot_older_than_stale_days_is_ignored_but_kept(
    tmp_path: Path, age: timedelta, fresh: bool
) -> None:
    memory = working_memory(tmp_path, stale_days=7)
    await memory.write(KEY, "- Topic: tea")
    path = Workspace(tmp_path).working_memory_path(KEY)
    set_age(path, age)

    assert (memory.read_fresh(KEY) is not None) is fresh
    assert path.read_text() == "- Topic: tea\n"


async def test_a_stale_snapshot_is_fresh_again_once_rewritten(tmp_path: Path) -> None:
    memory = working_memory(tmp_path, stale_days=1)
    await memory.write(KEY, "old")
    set_age(Workspace(tmp_path).working_memory_path(KEY), timedelta(days=3))
    assert memory.read_fresh(KEY) is None

    await memory.write(KEY, "new")
    set_age(Workspace(tmp_path).working_memory_path(KEY), timedelta(seconds=5))

    note = memory.read_fresh(KEY)
    assert note is not None and (note.text, note.age) == ("new", "updated today at 09:29")


async def test_a_file_from_the_future_counts_as_updated_today(tmp_path: Path) -> None:
    memory = working_memory(tmp_path)
    await memory.write(KEY, "clock skew")
    set_age(Workspace(tmp_path).working_memory_path(KEY), -timedelta(hours=1))

    note = memory.read_fresh(KEY)

    assert note is not None and note.age == "updated today at 10:30"


async def test_clear_removes_the_snapshot_and_is_fine_with_none(tmp_path: Path) -> None:
    memory = working_memory(tmp_path)
    await memory.write(KEY, "- Topic: tea")
    await memory.write("telegram:1", "another session")

    await memory.clear(KEY)
    await memory.clear(KEY)

    assert memory.read_fresh(KEY) is None
    assert not Workspace(tmp_path).working_memory_path(KEY).exists()
    assert memory.read_fresh("telegram:1") is not None


@pytest.mark.parametrize(
    ("updated", "phrase"),
    [
        (datetime(2026, 11, 25, 14, 5, tzinfo=UTC), "updated today at 14:05"),
        (datetime(2026, 11, 25, 0, 0, tzinfo=UTC), "updated today at 00:00"),
        (datetime(2026, 11, 24, 23, 59, tzinfo=UTC), "updated yesterday at 23:59"),
        (datetime(2026, 11, 24, 0, 1, tzinfo=UTC), "updated yesterday at 00:01"),
        (datetime(2026, 11, 22, 18, 0, tzinfo=UTC), "updated 3 days ago"),
        (datetime(2026, 11, 26, 9, 0, tzinfo=UTC), "updated today at 09:00"),  # clock skew
    ],
)
def test_the_age_is_told_by_calendar_day_so_it_changes_once_a_day(
    updated: datetime, phrase: str
) -> None:
    assert age_phrase(updated, datetime(2026, 11, 25, 16, 30, tzinfo=UTC)) == phrase


def test_the_age_is_told_in_the_clocks_time_zone() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    moment = datetime(2026, 11, 25, 0, 30, tzinfo=berlin)
    assert age_phrase(datetime(2026, 11, 24, 23, 10, tzinfo=UTC), moment) == (
        "updated today at 00:10"
    )


async def test_the_age_is_measured_against_the_injected_clock(tmp_path: Path) -> None:
    later = NOW + timedelta(days=3, hours=2)
    memory = WorkingMemory(Workspace(tmp_path), FileLocks(), stale_days=7, now=lambda: later)
    await memory.write(KEY, "- Topic: tea")
    set_age(Workspace(tmp_path).working_memory_path(KEY), timedelta(0))

    note = memory.read_fresh(KEY)

    assert note is not None
    assert note.age == "updated 3 days ago"
    assert note.updated_at == NOW.astimezone(UTC)


@pytest.mark.parametrize(("top_k", "shown"), [(1, 1), (3, 3), (6, 5)])
async def test_working_top_k_bounds_the_lines_the_prompt_shows(
    workspace: Path, fake_openai: FakeOpenAI, top_k: int, shown: int
) -> None:
    memory = MemorySettings(receipts=False, items=ItemSettings(working_top_k=top_k))
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=memory)
    lines = [f"- step {n}: check the valve {n}" for n in range(1, 6)]
    path = Workspace(workspace).working_memory_path(f"telegram:{OWNER}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")

    async with started_app(settings) as app:
        prompt = memory_section(await prompt_of_turn(app, fake_openai))

    assert [line for line in lines if line in prompt] == lines[:shown]
    if shown < len(lines):
        assert f"({len(lines) - shown} more lines not shown" in prompt
