"""The path locks' contract, for both: `FileLocks` (one host) and `PgLocks` (every replica;
skipped without `MNEMO_TEST_PG`). Two holders stand for two processes: each its own instance
(and, for PostgreSQL, its own pool)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.storage.files import FileLocks, Locks
from tests.pg import pg_database

SETTLE = 0.3  # seconds a blocked holder is given to (wrongly) get in


@pytest.fixture(params=["files", "postgresql"])
async def two(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[Locks]]:
    if request.param == "files":
        yield [FileLocks(tmp_path / "locks"), FileLocks(tmp_path / "locks")]
        return
    from bot.replicas.database import open_pool
    from bot.replicas.locks import PgLocks

    async with pg_database() as url:
        pools = [open_pool(url), open_pool(url)]
        for pool in pools:
            await pool.open()
        try:
            yield [PgLocks(pool, root=tmp_path) for pool in pools]
        finally:
            for pool in pools:
                await pool.close()


async def test_a_path_held_by_one_process_waits_for_it(two: list[Locks], tmp_path: Path) -> None:
    first, second = two
    path = tmp_path / "memory" / "MEMORY.md"
    order: list[str] = []

    async def later() -> None:
        async with second.hold(path):
            order.append("second in")

    async with first.hold(path):
        waiting = asyncio.create_task(later())
        await asyncio.sleep(SETTLE)
        order.append("first out")
    await asyncio.wait_for(waiting, 10)

    assert order == ["first out", "second in"]


async def test_other_paths_are_not_held(two: list[Locks], tmp_path: Path) -> None:
    first, second = two
    async with first.hold(tmp_path / "a.md"), asyncio.timeout(10), second.hold(tmp_path / "b.md"):
        held_both = True
    assert held_both


async def test_one_process_s_holders_take_turns(two: list[Locks], tmp_path: Path) -> None:
    locks = two[0]
    path = tmp_path / "items.jsonl"
    inside = 0
    most = 0

    async def one() -> None:
        nonlocal inside, most
        async with locks.hold(path):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.wait_for(asyncio.gather(*(one() for _ in range(5))), 10)
    assert most == 1
