"""The fault test: three replicas as processes on a PostgreSQL server of the test's own, 1,000
updates from 20 chats (a flood, then bursts from three chats), 5% delivered twice, while one
replica is SIGKILLed, one SIGTERMed, one frozen three times past its lease (mid-transaction,
mid-statement, anywhere) and woken, and the database restarted. Checked from outside
(`tests/replicas_run.py`): nothing lost, reordered, run twice at once in a chat, sent twice or
asked of the model again once its answer was sent (outside the instant of a kill or a freeze),
left queued; every chat the frozen replica held answered before it woke; every document
parses. Skipped only without `pg_ctl`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pg import private_server
from tests.replicas_run import Faults, Load, replicas_run

FAULTS = Faults(kill=0.15, term=0.35, freeze=(0.45, 0.55, 0.65), restart_db=0.75)


@pytest.mark.serial  # its kill windows are timed: `make test` runs it alone
@pytest.mark.timeout(900)
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

    told = repr(figures)  # a string: pytest shows it whole
    assert figures.lost == 0, told
    assert figures.reordered == 0, told
    assert figures.overlapping == 0, told
    assert figures.twice == 0, told
    assert figures.in_flight <= 4, told  # sent as the kill or a freeze came, not recorded
    assert figures.stuck == 0, told  # each chat moved on while its replica was frozen
    assert figures.freezes == 3 and figures.freezes_mid_transaction >= 1, told
    assert figures.recalled == 0, told
    assert figures.broken_files == [], told
    assert (figures.left_open, figures.left_jobs) == (0, 0), told
    assert figures.term_exit_codes == [0], told
    assert figures.repeats_delivered >= 40, told  # duplicates were delivered, and refused
    assert len(figures.per_replica) == 3, told  # every replica took updates
