"""Background work once in the cluster (`bot.replicas.once`): two replicas (each its own pool
and `OnceInCluster`) start the same named work; one runs it, the other takes it over when the
first stops or loses its connection. Skipped without `MNEMO_TEST_PG`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.replicas.once import OnceInCluster

LOOK = 0.1  # seconds between two tries, here
SETTLE = 1.0  # seconds the other replica is given to (wrongly) start the same work
WITHIN = 10.0


@dataclass
class Work:
    """A service that records when it runs."""

    replica: str
    log: list[str]
    running: bool = False
    starts: int = 0

    async def start(self) -> None:
        self.running, self.starts = True, self.starts + 1
        self.log.append(f"{self.replica} start")

    async def stop(self) -> None:
        self.running = False
        self.log.append(f"{self.replica} stop")


async def until(check: Callable[[], bool]) -> None:
    for _ in range(int(WITHIN / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("not within the bound")


@dataclass
class Replica:
    works: dict[str, Work]
    once: OnceInCluster

    async def close(self) -> None:
        await self.once.stop()
        await self.once.pool.close()


async def replicas(url: str, names: list[str], log: list[str]) -> list[Replica]:
    from bot.replicas.database import open_pool
    from bot.replicas.once import OnceInCluster

    made = []
    for name in names:
        pool = open_pool(url)
        await pool.open()
        works = {job: Work(name, log) for job in ("note-archive", "undo-purge", "reminders")}
        once = OnceInCluster(pool, list(works.items()), look_every=LOOK)
        made.append(Replica(works, once))
    return made


async def test_each_piece_of_work_runs_on_one_replica_and_moves_when_it_stops(pg_url: str) -> None:
    log: list[str] = []
    a, b = await replicas(pg_url, ["a", "b"], log)
    await a.once.start()
    await until(lambda: len(a.once.running()) == 3)
    await b.once.start()
    await asyncio.sleep(SETTLE)

    assert all(w.running for w in a.works.values())
    assert not any(w.starts for w in b.works.values())

    await a.once.stop()
    await until(lambda: all(w.running for w in b.works.values()))
    await b.once.stop()

    assert [w.starts for w in a.works.values()] == [1, 1, 1]
    assert [w.starts for w in b.works.values()] == [1, 1, 1]
    # the work stopped on a before b started it
    assert log.index("a stop") < log.index("b start")
    assert not any(w.running for r in (a, b) for w in r.works.values())
    for r in (a, b):
        await r.close()


async def test_a_replica_whose_connection_is_cut_stops_its_work_and_another_takes_it(
    pg_url: str,
) -> None:
    import psycopg

    from bot.replicas.once import APPLICATION

    log: list[str] = []
    a, b = await replicas(pg_url, ["a", "b"], log)
    await a.once.start()
    await until(lambda: len(a.once.running()) == 3)
    await b.once.start()
    await asyncio.sleep(SETTLE)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid IN "
            "(SELECT pid FROM pg_locks WHERE locktype = 'advisory')",
            (APPLICATION,),
        )

    await until(lambda: all(w.running for w in b.works.values()))
    await until(lambda: not any(w.running for w in a.works.values()))
    await asyncio.sleep(SETTLE)  # a looks again, and finds every lock taken

    assert [w.starts for w in a.works.values()] == [1, 1, 1]
    assert [w.starts for w in b.works.values()] == [1, 1, 1]
    for r in (a, b):
        await r.close()
