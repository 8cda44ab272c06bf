"""The fault test: three replicas as processes on a PostgreSQL server of the test's own, 1,000
updates from 20 chats (a flood, then bursts from three chats), 5% delivered twice, while one
replica is SIGKILLed, one SIGTERMed, one frozen past its heartbeat and woken, and the database
restarted. Checked from outside (`tests/replicas_run.py`): nothing lost, reordered, run twice
at once in a chat, sent twice or asked of the model again once its answer was sent (outside
a kill's or a freeze's window), left queued; every document parses. Skipped only without
`pg_ctl`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pg import private_server
from tests.replicas_run import Faults, Load, replicas_run

FAULTS = Faults(kill=0.15, term=0.35, freeze=0.55, restart_db=0.75)


@pytest.mark.serial  # its kill windows are timed: `make test` runs it alone
@pytest.mark.timeout(480)
async def test_three_replicas_lose_nothing_through_kill_stop_freeze_and_a_database_restart(
    tmp_path: Path,
) -> None:
    async with private_server() as server:
        figures = await replicas_run(
            tmp_path,
            server.url,
            replicas=3,
            load=Load(chats=20, flood=800, bursts=200),
            faults=FAULTS,
            server=server,
            seed=5,
        )

    assert figures.lost == 0, figures
    assert figures.reordered == 0, figures
    assert figures.overlapping == 0, figures
    assert figures.twice == 0, figures
    assert figures.in_flight <= 4, figures  # sent as the kill or the freeze came, or on waking
    assert figures.recalled == 0, figures
    assert figures.broken_files == [], figures
    assert (figures.left_open, figures.left_jobs) == (0, 0), figures
    assert figures.term_exit_codes == [0], figures
    assert figures.repeats_delivered >= 40, figures  # duplicates were delivered, and refused
    assert len(figures.per_replica) == 3, figures  # every replica took updates
