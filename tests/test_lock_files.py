"""`FileLocks` keeps one lock file for a workspace, and paths sharing a byte of it neither
deadlock when held together nor stop excluding another holder."""

from __future__ import annotations

import asyncio
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

from bot.storage.files import FileLocks
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER
from tests.reminding import bot_at, reminder_settings, schedule

SETTLE = 0.3  # seconds a blocked holder is given to (wrongly) get in
REPO = Path(__file__).resolve().parents[1]


async def test_two_paths_on_one_byte_nest_and_still_exclude_another_holder(tmp_path: Path) -> None:
    ours, theirs = FileLocks(tmp_path / "locks", slots=1), FileLocks(tmp_path / "locks", slots=1)
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    got_in = asyncio.Event()

    async def other() -> None:
        async with theirs.hold(b):
            got_in.set()

    async with asyncio.timeout(10), ours.hold(a):
        async with ours.hold(b):  # the same byte, held again here: no wait for itself
            waiting = asyncio.create_task(other())
        await asyncio.sleep(SETTLE)  # b let go here, a still holds the byte
        assert not got_in.is_set()
    await asyncio.wait_for(got_in.wait(), 10)
    await waiting
    assert [p.name for p in (tmp_path / "locks").iterdir()] == ["paths.lock"]


async def test_a_held_path_excludes_a_holder_in_another_thread_s_loop(tmp_path: Path) -> None:
    locks = FileLocks(tmp_path / "locks")
    path = tmp_path / "MEMORY.md"

    async def try_once() -> bool:  # as another process would: its own `FileLocks`
        other = FileLocks(tmp_path / "locks")
        try:
            async with asyncio.timeout(SETTLE), other.hold(path):
                return True
        except TimeoutError:
            return False

    async with locks.hold(path):
        assert not await asyncio.to_thread(asyncio.run, try_once())
    assert await asyncio.to_thread(asyncio.run, try_once())


async def test_a_first_day_leaves_one_lock_file(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = reminder_settings(workspace, fake_telegram, fake_openai)
    start = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
    async with bot_at(settings, fake_telegram, start) as bot:
        fake_openai.script(
            Reply("Noted. <memory>Ann likes tea</memory><working-memory>- tea</working-memory>"),
            Reply("Green, mostly."),
            Reply("Two questions about tea."),  # the summary /compact asks for
        )
        said = ["I like tea", "which tea?", "/memory", "/forget tea", "/compact 1"]
        for n, text in enumerate(said, start=1):
            fake_telegram.push_text(OWNER, OWNER, text)
            await fake_telegram.wait_for_messages(OWNER, n)
        schedule(fake_openai, text="stretch", when="in 10 minutes")
        fake_telegram.push_text(OWNER, OWNER, "remind me in 10 minutes to stretch")
        await fake_telegram.wait_for_messages(OWNER, len(said) + 1)
        assert await bot.at(datetime(2026, 11, 27, 8, 10, tzinfo=UTC)) == 1
        await bot.settled()
        texts = bot.texts(OWNER)

    assert texts[-1] == "⏰ stretch"
    assert any(text.startswith("Compacted") for text in texts), texts
    lock_files = [p.relative_to(workspace) for p in workspace.rglob("*lock*") if p.is_file()]
    assert lock_files == [Path("state/locks/paths.lock")]


HOLDER = """
import asyncio, sys
from pathlib import Path
from bot.storage.files import FileLocks

async def main() -> None:
    async with FileLocks(Path(sys.argv[1])).hold(Path(sys.argv[2])):
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.readline)

asyncio.run(main())
"""


async def holder(locks: Path, path: Path) -> asyncio.subprocess.Process:
    """Another process holding `path` until its stdin gets a line (or it is killed)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLDER,
        str(locks),
        str(path),
        cwd=REPO,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    assert await asyncio.wait_for(process.stdout.readline(), 30) == b"held\n"
    return process


async def gets_in(locks: FileLocks, path: Path, within: float) -> bool:
    try:
        async with asyncio.timeout(within), locks.hold(path):
            return True
    except TimeoutError:
        return False


async def test_another_process_holding_a_path_excludes_until_it_lets_go_or_dies(
    tmp_path: Path,
) -> None:
    path, lock_dir = tmp_path / "memory" / "MEMORY.md", tmp_path / "locks"
    ours = FileLocks(lock_dir)

    other = await holder(lock_dir, path)
    assert not await gets_in(ours, path, SETTLE)
    assert await gets_in(ours, tmp_path / "other.md", 10)  # other paths are free
    assert other.stdin is not None
    other.stdin.write(b"done\n")
    await other.wait()
    assert await gets_in(ours, path, 10)

    killed = await holder(lock_dir, path)
    assert not await gets_in(ours, path, SETTLE)
    killed.kill()  # a process that dies lets go: the kernel drops its locks
    await killed.wait()
    assert await gets_in(ours, path, 10)


async def test_a_lock_folder_deleted_by_hand_is_made_again_and_still_excludes(
    tmp_path: Path,
) -> None:
    lock_dir, path = tmp_path / "locks", tmp_path / "MEMORY.md"
    ours = FileLocks(lock_dir)
    async with ours.hold(path):
        pass
    shutil.rmtree(lock_dir)  # a person tidying the workspace while the bot runs

    async with ours.hold(path):
        assert not await gets_in(FileLocks(lock_dir), path, SETTLE)
    assert (lock_dir / "paths.lock").is_file()
