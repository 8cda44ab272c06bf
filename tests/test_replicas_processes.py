"""Three replicas as processes on one PostgreSQL, one SIGKILLed mid-burst and started again,
checked from outside (`tests/replicas_run.py`): nothing lost, nothing reordered, nothing sent
twice outside the kill's in-flight window, nothing left queued. Skipped without
`MNEMO_TEST_PG`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replicas_run import Load, replicas_run


@pytest.mark.timeout(300)
async def test_three_replicas_and_a_kill_lose_nothing_and_keep_each_chat_s_order(
    tmp_path: Path, pg_url: str
) -> None:
    figures = await replicas_run(
        tmp_path, pg_url, replicas=3, load=Load(chats=8, flood=120), seed=3
    )

    assert figures.lost == 0, figures
    assert figures.reordered == 0, figures
    assert figures.twice == 0, figures
    assert figures.in_flight <= 2, figures  # the kill's window: sent, not yet recorded
    assert (figures.left_open, figures.left_jobs) == (0, 0), figures
    assert figures.repeats_delivered > 0, figures  # duplicates were delivered, and refused
    assert len(figures.per_replica) >= 3, figures  # every replica took updates
