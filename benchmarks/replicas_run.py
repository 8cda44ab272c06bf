"""Replicated mode against the embedded mode, on the same machine: turn overhead, drain, faults.

    python benchmarks/replicas_run.py [--messages 1000] [--chats 20] [--replicas 1 3]

Every bot is `python -m bot run` as a process against the fake Bot API and model. The embedded
mode is `make run`'s: one process, long polling, files. A replicated run is N processes in
webhook mode on a PostgreSQL server of the benchmark's own (initdb + pg_ctl in a tmp folder,
as `tests/pg.py` starts it; skipped where there is no `pg_ctl`), the fake delivering round
robin with Telegram's per-chat order and retries, 5% of the updates twice.

- turn overhead p50: 30 messages from one chat, each sent once the one before was answered,
  the model answering at once: the milliseconds from the update to its reply are the bot's own;
- drain: `--messages` updates from `--chats` chats at once, seconds until the last reply;
- faults (replicated only): the same number of updates, 4/5 at once and 1/5 in four bursts from
  three chats, while a replica is SIGKILLed (15% of the replies), one SIGTERMed (35%), one
  frozen by SIGSTOP past its heartbeat (55%) and the database stopped and started (75%)
  (`tests/replicas_run.py` runs it and counts; with one replica every fault hits it).

Exit 1 when a fault run loses, reorders, overlaps, sends twice outside the kill's window, asks
the model again for a sent answer, breaks a file or leaves something queued.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import machine_line
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.pg import NO_PG_CTL, pg_bin, private_server
from tests.replicas_run import (
    Faults,
    Load,
    ReplicaFigures,
    Run,
    first_sent,
    replica_node,
    replicas_run,
    start_node,
    stop_nodes,
    until,
)

SEQUENTIAL = 30
FAULTS = Faults(kill=0.15, term=0.35, freeze=(0.45, 0.55, 0.65), restart_db=0.75)
STEADY = f"{'mode':<12}{'turn overhead p50':>19}{'drain':>9}"
COLUMNS = (
    f"{'replicas':>8}{'lost':>6}{'reordered':>11}{'overlapping':>13}{'twice':>7}"
    f"{'in flight':>11}{'model again':>13}{'broken':>8}{'left':>6}{'retried':>9}"
    f"{'dup.':>6}{'drain':>8}"
)


@dataclass
class Steady:
    mode: str
    overhead_p50: float = 0.0  # ms
    drain: float = 0.0  # s


def _answered_more_than(run: Run, count: int) -> bool:
    return run.answered() > count


async def steady_run(tmp: Path, pg_url: str | None, replicas: int, load: Load) -> Steady:
    """`SEQUENTIAL` messages one at a time, then `load.flood` at once; `pg_url` None: the
    embedded mode."""
    mode = "embedded" if pg_url is None else f"{replicas} replica{'s' * (replicas > 1)}"
    steady = Steady(mode)
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        run = Run(telegram, model, Load(load.chats, SEQUENTIAL + load.flood), seed=1, delay=0.0)
        run.nodes = [replica_node(tmp, f"r{n}", run, pg_url) for n in range(replicas)]
        try:
            await asyncio.gather(*(start_node(node) for node in run.nodes))
            took: list[float] = []
            for n in range(SEQUENTIAL):
                pushed_at = time.monotonic()
                run.push(1, run.users[:1])
                await until(partial(_answered_more_than, run, n), within=30)
                took.append(first_sent(run).get(run.texts[n], time.monotonic()) - pushed_at)
            pushed_at = time.monotonic()
            run.push(load.flood, run.users)
            await until(partial(_answered_more_than, run, len(run.texts) - 1), within=600)
            steady.drain = time.monotonic() - pushed_at
        finally:
            await stop_nodes(run.nodes)
    steady.overhead_p50 = 1000 * sorted(took)[len(took) // 2]
    return steady


async def replicated(count: int, load: Load, *, faults: bool) -> Steady | ReplicaFigures:
    with tempfile.TemporaryDirectory(prefix="mnemo-replicas-") as folder:
        async with private_server() as server:
            if not faults:
                return await steady_run(Path(folder), server.url, count, load)
            loaded = Load(load.chats, load.flood * 4 // 5, load.flood - load.flood * 4 // 5)
            return await replicas_run(
                Path(folder),
                server.url,
                replicas=count,
                load=loaded,
                faults=FAULTS,
                server=server,
                seed=5,
            )


def steady_row(steady: Steady) -> str:
    return f"{steady.mode:<12}{steady.overhead_p50:>16.1f} ms{steady.drain:>7.1f} s"


def fault_row(f: ReplicaFigures) -> str:
    left = f.left_open + f.left_jobs
    return (
        f"{f.replicas:>8}{f.lost:>6}{f.reordered:>11}{f.overlapping:>13}{f.twice:>7}"
        f"{f.in_flight:>11}{f.recalled:>13}{len(f.broken_files):>8}{left:>6}{f.retries:>9}"
        f"{f.repeats_delivered:>6}{f.drain:>6.1f} s"
    )


def failed(f: ReplicaFigures) -> bool:
    left = f.left_open + f.left_jobs
    return bool(f.lost or f.reordered or f.overlapping or f.twice or f.recalled or left) or bool(
        f.broken_files
    )


async def main(counts: list[int], load: Load) -> int:
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)  # a killed bot's cut requests
    print(machine_line(), flush=True)
    print(f"{load.flood:,} updates from {load.chats} chats", flush=True)
    print(STEADY, flush=True)
    with tempfile.TemporaryDirectory(prefix="mnemo-embedded-") as folder:
        print(steady_row(await steady_run(Path(folder), None, 1, load)), flush=True)
    if pg_bin() is None:
        print(f"replicated: skipped, {NO_PG_CTL}")
        return 0
    for count in counts:
        steady = await replicated(count, load, faults=False)
        assert isinstance(steady, Steady)
        print(steady_row(steady), flush=True)
    print("faults: SIGKILL, SIGTERM, SIGSTOP past the heartbeat, database restart", flush=True)
    print(COLUMNS, flush=True)
    bad = False
    for count in counts:
        figures = await replicated(count, load, faults=True)
        assert isinstance(figures, ReplicaFigures)
        print(fault_row(figures), flush=True)
        bad |= failed(figures)
    return 1 if bad else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    arguments = parser.parse_args()
    run = main(arguments.replicas, Load(arguments.chats, arguments.messages))
    sys.exit(asyncio.run(run))
