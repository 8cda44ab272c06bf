"""The consolidation history: both files, ISO headings, append-only, the last entry's time."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from bot.memory.notes.history import HistoryLog
from bot.models import GLOBAL_SCOPE, MemoryScope
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace

NOW = datetime(2026, 11, 21, 10, 30, 5, tzinfo=UTC)


def history(tmp_path: Path) -> HistoryLog:
    return HistoryLog(Workspace(tmp_path), FileLocks())


async def test_an_entry_goes_to_the_main_and_the_monthly_file_under_an_iso_heading(
    tmp_path: Path,
) -> None:
    await history(tmp_path).append(GLOBAL_SCOPE, "[2026-11-21 10:30] Ann said hi.\n", NOW)

    expected = "## 2026-11-21T10:30:05+00:00\n[2026-11-21 10:30] Ann said hi.\n\n"
    assert (tmp_path / "memory" / "HISTORY.md").read_text() == expected
    assert (tmp_path / "memory" / "HISTORY-2026-11.md").read_text() == expected
    assert (tmp_path / "memory" / "HISTORY.md").stat().st_mode & 0o777 == 0o600


async def test_entries_are_appended_and_months_rotate(tmp_path: Path) -> None:
    log = history(tmp_path)
    await log.append(GLOBAL_SCOPE, "first", NOW)
    before = (tmp_path / "memory" / "HISTORY.md").read_bytes()

    await log.append(GLOBAL_SCOPE, "second", NOW + timedelta(days=20))

    main = (tmp_path / "memory" / "HISTORY.md").read_bytes()
    assert main.startswith(before)
    assert main.decode().count("## ") == 2
    assert "second" not in (tmp_path / "memory" / "HISTORY-2026-11.md").read_text()
    december = (tmp_path / "memory" / "HISTORY-2026-12.md").read_text()
    assert december == "## 2026-12-11T10:30:05+00:00\nsecond\n\n"


async def test_a_hand_edit_of_the_history_is_kept(tmp_path: Path) -> None:
    log = history(tmp_path)
    await log.append(GLOBAL_SCOPE, "first", NOW)
    path = tmp_path / "memory" / "HISTORY.md"
    path.write_text(path.read_text() + "my own note\n\n")

    await log.append(GLOBAL_SCOPE, "second", NOW)

    assert path.read_text().index("my own note") < path.read_text().index("second")


async def test_a_chat_has_its_own_history(tmp_path: Path) -> None:
    group = MemoryScope(chat_key="telegram:-100123")

    await history(tmp_path).append(group, "the group planned a picnic", NOW)

    folder = tmp_path / "memory" / "chats" / "telegram%3A-100123"
    assert "picnic" in (folder / "HISTORY.md").read_text()
    assert "picnic" in (folder / "HISTORY-2026-11.md").read_text()
    assert not (tmp_path / "memory" / "HISTORY.md").exists()


async def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    log = history(tmp_path)

    await asyncio.gather(*(log.append(GLOBAL_SCOPE, f"entry {i}", NOW) for i in range(20)))

    for name in ("HISTORY.md", "HISTORY-2026-11.md"):
        text = (tmp_path / "memory" / name).read_text()
        assert sorted(text.split("\n\n")[:-1]) == sorted(
            f"## 2026-11-21T10:30:05+00:00\nentry {i}" for i in range(20)
        )


async def test_the_last_consolidation_is_the_last_heading_of_one(tmp_path: Path) -> None:
    log = history(tmp_path)
    assert log.last_consolidation(GLOBAL_SCOPE) is None
    plus_two = timezone(timedelta(hours=2))

    await log.append(GLOBAL_SCOPE, "first", NOW)
    await log.append(
        GLOBAL_SCOPE, "## not a time\nbody", NOW.astimezone(plus_two) + timedelta(hours=1)
    )

    found = log.last_consolidation(GLOBAL_SCOPE)
    assert found == NOW + timedelta(hours=1)
    assert found is not None and found.utcoffset() == timedelta(hours=2)
    assert log.last_consolidation(MemoryScope(chat_key="telegram:5")) is None


async def test_a_compaction_checkpoint_is_no_consolidation(tmp_path: Path) -> None:
    log = history(tmp_path)
    await log.append(GLOBAL_SCOPE, "[raw-fallback] The model could not consolidate", NOW)
    later = NOW + timedelta(hours=3)
    await log.append(GLOBAL_SCOPE, "[checkpoint] 8 messages before compaction (auto)", later)

    assert log.last_consolidation(GLOBAL_SCOPE) == NOW
    assert log.last_compaction(GLOBAL_SCOPE) == later


def test_a_seed_style_heading_is_read_and_found_in_a_long_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory" / "HISTORY.md"
    path.parent.mkdir(parents=True)
    long_entry = "x" * 100_000
    path.write_text(f"## 2026-02-27T14:30:00.000Z\n{long_entry}\n\n")

    assert history(tmp_path).last_consolidation(GLOBAL_SCOPE) == datetime(
        2026, 2, 27, 14, 30, tzinfo=UTC
    )
