"""Atomic writes, appends, permissions (the workspace root too) and locks."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from bot.storage import files
from tests.fakes.openai_api import FakeOpenAI
from tests.harness import make_settings, started_app


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_atomic_write_creates_private_file_and_folder(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "note.md"
    files.atomic_write_text(target, "héllo")
    assert target.read_text(encoding="utf-8") == "héllo"
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700
    assert [p.name for p in target.parent.iterdir()] == ["note.md"]  # no temp left behind


def test_failed_write_leaves_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    files.atomic_write_text(target, "old")

    with pytest.raises(TypeError):
        files.atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]


def test_append_keeps_existing_lines(tmp_path: Path) -> None:
    target = tmp_path / "2026-11-21.md"
    target.write_text("hand-written line\n")
    files.append_text(target, "[09:00] User: a | Assistant: b\n")
    assert target.read_text().splitlines() == [
        "hand-written line",
        "[09:00] User: a | Assistant: b",
    ]


def test_read_text_tolerates_binary_and_missing(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    assert files.read_text(target) is None
    target.write_bytes(b"ok \xff\xfe end")
    assert files.read_text(target) == "ok \ufffd\ufffd end"


async def test_hold_serialises_read_modify_write(tmp_path: Path) -> None:
    target = tmp_path / "counter.txt"
    files.atomic_write_text(target, "0")
    locks = files.FileLocks()

    async def bump() -> None:
        async with locks.hold(target):
            value = int(target.read_text())
            await asyncio.sleep(0)
            files.atomic_write_text(target, str(value + 1))

    await asyncio.gather(*(bump() for _ in range(20)))
    assert target.read_text() == "20"


async def test_a_lock_is_released_even_when_its_body_never_leaves_the_loop(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    locks = files.FileLocks(tmp_path / "locks")
    async with locks.hold(target):
        pass  # no thread hop inside: the release happens on the loop's thread

    async def grab() -> bool:  # as another process would: its own locks, its own loop
        async with asyncio.timeout(1), files.FileLocks(tmp_path / "locks").hold(target):
            return True

    assert await asyncio.to_thread(asyncio.run, grab())
    assert not target.with_name("MEMORY.md.lock").exists()  # lock files live in the lock folder


def test_every_folder_made_on_the_way_is_private(tmp_path: Path) -> None:
    files.ensure_dir(tmp_path / "a" / "b" / "c")

    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3


@pytest.mark.parametrize("existing", [None, 0o755], ids=["made by the bot", "made by git"])
async def test_the_workspace_root_is_private_once_the_bot_has_started(
    tmp_path: Path, fake_openai: FakeOpenAI, existing: int | None
) -> None:
    root = tmp_path / "home" / "workspace"
    if existing is not None:
        root.mkdir(parents=True)
        root.chmod(existing)
    settings = make_settings(root, telegram=None, openai=fake_openai)

    async with started_app(settings):
        pass

    assert mode(root) == 0o700
    assert {mode(folder) for folder in root.rglob("*") if folder.is_dir()} == {0o700}
    if existing is None:
        assert mode(root.parent) == 0o700
