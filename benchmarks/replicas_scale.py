"""Replicated mode's scale on this machine: 1, 2, 3 and 5 replicas against the embedded mode,
on the same burst; and how fast a replica starts.

    python benchmarks/replicas_scale.py [--messages 600] [--chats 20] [--replicas 1 2 3 5]
        [--delay 0.2] [--png benchmarks/replicas_scale.png]

Every bot is `python -m bot run` as a process against the fake Bot API and model
(`tests/replicas_run.py`'s harness): the embedded mode is one process polling, with files; a
replicated run is N processes in webhook mode on a PostgreSQL server of the benchmark's own,
the fake delivering round robin with Telegram's per-chat order. The burst: `--messages` updates
from `--chats` chats at once, the model answering each after up to `--delay` seconds (a fast
hosted model's first token). For each mode:

- drain: seconds from the burst to its last reply;
- turn p50 / p95: a turn's own time, from its start to its reply (the replicas' logs,
  `turn_start` to `turn_done`), in milliseconds;
- CPU per replica: seconds of CPU each bot process spent on the burst (user + system), and
  the PostgreSQL server's, all of its processes together;
- load: the machine's 1-minute load average as the row ends (the figures are CPU-bound: a row
  taken beside other work is slower for it);
- start: seconds from a replica's launch to its `/healthz` answering 200, and the CPU its
  start took (what it logs as it serves: about what an idle machine waits).

Telegram's ~30 messages a second for one bot are paced across the replicas (`bot.replicas.pace`),
so no mode drains a burst faster than messages / 30 seconds: the figure says where the ceiling
is. A text plot is printed; with matplotlib importable, `--png` writes the figure too.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import machine_line
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import start_bot_process
from tests.pg import NO_PG_CTL, PrivateServer, pg_bin, private_server
from tests.replicas_run import Load, Replica, Run, replica_node, start_node, stop_nodes, until

PACE = 30.0  # Telegram's messages a second for one bot
COLUMNS = (
    f"{'mode':<12}{'drain':>9}{'msg/s':>8}{'turn p50':>11}{'turn p95':>11}"
    f"{'CPU/replica':>13}{'CPU db':>9}{'load':>7}"
)


@dataclass
class Scale:
    mode: str
    replicas: int
    drain: float = 0.0  # s
    turns: list[float] = field(default_factory=list)  # s, each turn's own time
    cpu: list[float] = field(default_factory=list)  # s, per bot process
    db_cpu: float = 0.0  # s, the PostgreSQL server's

    def percentile(self, share: float) -> float:
        ordered = sorted(self.turns)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of the process `pid` so far (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def server_cpu(server: PrivateServer | None) -> float:
    """The PostgreSQL server's CPU so far: the postmaster and its children (/proc)."""
    if server is None:
        return 0.0
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            ppid = int(text.rsplit(")", 1)[1].split()[1])
            if int(stat.parent.name) == postmaster or ppid == postmaster:
                total += cpu_of(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return total


def turn_times(log: Path) -> list[float]:
    """Each turn's seconds from `turn_start` to `turn_done`, from a bot's JSON log."""
    started: dict[str, float] = {}
    took: list[float] = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        if entry.get("event") not in ("turn_start", "turn_done") or "turn" not in entry:
            continue
        at = datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp()
        if entry["event"] == "turn_start":
            started[entry["turn"]] = at
        elif entry["turn"] in started:
            took.append(at - started.pop(entry["turn"]))
    return took


async def burst(
    tmp: Path, replicas: int, load: Load, delay: float, pg: PrivateServer | None
) -> Scale:
    """One mode on the burst; `pg` None: the embedded mode."""
    mode = "embedded" if pg is None else f"{replicas} replica{'s' * (replicas > 1)}"
    scale = Scale(mode, replicas)
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        run = Run(telegram, model, load, seed=1, delay=delay)
        url = None if pg is None else pg.url
        run.nodes = [replica_node(tmp, f"r{n}", run, url) for n in range(replicas)]
        try:
            await asyncio.gather(*(start_node(node) for node in run.nodes))
            before = [cpu_of(_pid(node)) for node in run.nodes]
            db_before = server_cpu(pg)
            pushed = time.monotonic()
            run.push(load.flood, run.users)
            await until(lambda: run.answered() >= load.flood, within=1800)
            scale.drain = time.monotonic() - pushed
            scale.cpu = [cpu_of(_pid(n)) - b for n, b in zip(run.nodes, before, strict=True)]
            scale.db_cpu = server_cpu(pg) - db_before
        finally:
            await stop_nodes(run.nodes)
    scale.turns = [t for node in run.nodes for t in turn_times(node.log)]
    return scale


def _pid(node: Replica) -> int:
    assert node.process is not None
    return node.process.pid


async def replica_start(tmp: Path, pg: PrivateServer) -> tuple[float, float]:
    """Seconds from a replica's launch to `/healthz` answering, and its CPU until then."""
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        run = Run(telegram, model, Load(1, 1), seed=1)
        node = replica_node(tmp, "start", run, pg.url)
        launched = time.monotonic()
        node.process = start_bot_process(node.env, node.log.parent, node.log)
        port = node.env["BOT_TELEGRAM__WEBHOOK_PORT"]
        healthz = f"http://127.0.0.1:{port}/healthz"
        await until_healthy(healthz)
        took = time.monotonic() - launched
        await until(lambda: _started_cpu(node.log) is not None, within=60)
        await stop_nodes([node])
    return took, _started_cpu(node.log) or 0.0


def _started_cpu(log: Path) -> float | None:
    """The CPU the replica says its start took (its `telegram_webhook_started` line)."""
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"telegram_webhook_started"' in line:
            return float(json.loads(line)["cpu_s"])
    return None


async def until_healthy(url: str, within: float = 300.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await asyncio.to_thread(_healthy, url):
            return
        await asyncio.sleep(0.01)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def row(scale: Scale, messages: int) -> str:
    cpu = statistics.mean(scale.cpu) if scale.cpu else 0.0
    return (
        f"{scale.mode:<12}{scale.drain:>7.1f} s{messages / scale.drain:>8.1f}"
        f"{1000 * scale.percentile(0.5):>8.0f} ms{1000 * scale.percentile(0.95):>8.0f} ms"
        f"{cpu:>11.1f} s{scale.db_cpu:>7.1f} s{os.getloadavg()[0]:>7.1f}"
    )


def text_plot(scales: list[Scale], messages: int, width: int = 40) -> list[str]:
    """Messages a second by mode, as bars, with Telegram's pace marked."""
    top = max([PACE, *(messages / s.drain for s in scales)])
    lines = [f"messages answered a second ({'|'} = Telegram's {PACE:g} a second for one bot)"]
    mark = round(width * PACE / top)
    for scale in scales:
        rate = messages / scale.drain
        bar = "█" * round(width * rate / top)
        bar = bar.ljust(width)
        bar = bar[:mark] + "|" + bar[mark + 1 :] if mark < width else bar + "|"
        lines.append(f"{scale.mode:<12}{bar} {rate:.1f}")
    return lines


def png(scales: list[Scale], messages: int, path: Path) -> bool:
    """The figure as a PNG, when matplotlib is there (it is not one of Mnemo's dependencies)."""
    try:
        matplotlib: Any = importlib.import_module("matplotlib")
    except ImportError:
        return False
    matplotlib.use("Agg")
    pyplot: Any = importlib.import_module("matplotlib.pyplot")
    figure, (rates, turns) = pyplot.subplots(1, 2, figsize=(10, 4))
    names = [s.mode for s in scales]
    rates.bar(names, [messages / s.drain for s in scales], color="#4a7fb5")
    rates.axhline(PACE, color="#b5544a", linestyle="--", label="Telegram: 30 msg/s per bot")
    rates.set_ylabel("messages answered per second")
    rates.legend(loc="lower right")
    turns.bar(names, [1000 * s.percentile(0.5) for s in scales], color="#6aa86a", label="p50")
    turns.plot(names, [1000 * s.percentile(0.95) for s in scales], "o", color="#333", label="p95")
    turns.set_ylabel("a turn's own time (ms)")
    turns.legend()
    figure.suptitle(f"{messages} messages at once: replicated mode against the embedded mode")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return True


async def replicated(count: int, load: Load, delay: float) -> Scale:
    with tempfile.TemporaryDirectory(prefix="mnemo-scale-") as folder:
        async with private_server() as server:
            return await burst(Path(folder), count, load, delay, server)


async def main(counts: list[int], load: Load, delay: float, picture: Path | None) -> int:
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    print(machine_line(), flush=True)
    if pg_bin() is None:
        print(f"replicated: skipped, {NO_PG_CTL}")
        return 0
    with tempfile.TemporaryDirectory(prefix="mnemo-scale-") as folder:
        async with private_server() as server:
            starts = [await replica_start(Path(folder) / f"s{n}", server) for n in range(3)]
    print(
        "replica start to /healthz: "
        + ", ".join(f"{took:.2f} s ({cpu:.2f} s CPU)" for took, cpu in starts),
        flush=True,
    )
    print(f"{load.flood:,} messages from {load.chats} chats at once, model delay ≤ {delay:g} s")
    print(COLUMNS, flush=True)
    with tempfile.TemporaryDirectory(prefix="mnemo-embedded-") as folder:
        scales = [await burst(Path(folder), 1, load, delay, None)]
    print(row(scales[0], load.flood), flush=True)
    for count in counts:
        scales.append(await replicated(count, load, delay))
        print(row(scales[-1], load.flood), flush=True)
    print("\n".join(text_plot(scales, load.flood)))
    if picture is not None and png(scales, load.flood, picture):
        print(f"figure: {picture}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=600)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3, 5])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--png", type=Path, default=None)
    arguments = parser.parse_args()
    load = Load(arguments.chats, arguments.messages)
    sys.exit(asyncio.run(main(arguments.replicas, load, arguments.delay, arguments.png)))
