"""A memory write's best-effort boundary (`bot.memory.facts.attempt`): a failed write is logged
and the turn goes on, but the replicas' database being away fails the turn (its job runs
again once the database is back), so the memory is written then, not dropped."""

from __future__ import annotations

import pytest

from bot.errors import StoreAway
from bot.memory.facts import attempt


async def _fails(error: Exception) -> int:
    raise error


async def test_a_failed_memory_write_is_logged_and_the_turn_goes_on() -> None:
    assert await attempt("follow", _fails(OSError("disk full")), default=0) == 0


async def test_the_database_away_fails_the_turn_so_the_write_is_made_again() -> None:
    with pytest.raises(StoreAway):
        await attempt("follow", _fails(StoreAway("the shared database is unreachable")), default=0)
