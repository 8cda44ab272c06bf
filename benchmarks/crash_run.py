"""Crash figures: messages, stops, lost, duplicated, asked again (issue 9).

    python benchmarks/crash_run.py [--seed 1] [--runs bursts flood together] [--json]

The bot as a process (`python -m bot run`) against the fake Bot API and model (`tests/crash.py`
holds the run and what it counts). Three runs:

- bursts: 200 messages over 3 chats, 18 stops at random points (every third a SIGTERM, the
  rest SIGKILL), as the fault run in issue 9 measured it (10 lost before);
- flood: 1,000 messages from 20 chats arriving at once, 3 stops, each a SIGTERM
  (614 lost before with a 10 s grace).
- together: 200 messages with the default 0.5 s debounce (quick follow-ups answered in one
  reply) in a private chat, a group and a forum topic, 18 SIGKILLs; "late" counts replies to a
  message sent after one to a later message of the same chat (issue 36: 1 in the group and 1
  in the topic before)

Prints a table, one row a run (`--json`: one JSON object a line, the machine first). Exit 1 when
a message is lost, answered twice, or asked of the model again after its answer was saved; or
has no daily-note line, or more than one; or a file does not parse; or the HISTORY files
disagree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import machine_line
from tests.crash import CrashFigures, crash_run

RUNS: dict[str, dict[str, Any]] = {
    "bursts": {"chats": 3, "messages": 200, "stops": 18, "sigterm_every": 3},
    "flood": {"chats": 20, "messages": 1000, "stops": 3, "sigterm_every": 1},
    # the default debounce: follow-ups answered together, in a private chat, a group, a topic
    "together": {"messages": 200, "stops": 18, "sigterm_every": 100, "together": True},
}
COLUMNS = (
    f"{'run':<8}{'messages':>9}{'chats':>7}{'SIGKILL':>9}{'SIGTERM':>9}{'lost':>6}"
    f"{'duplicated':>12}{'in flight':>11}{'recalled':>10}{'extra calls':>13}{'unnoted':>9}"
    f"{'noted 2+':>10}{'late':>6}{'seconds':>9}"
)


def row(name: str, figures: CrashFigures) -> str:
    return (
        f"{name:<8}{figures.messages:>9,}{figures.chats:>7}{figures.kills:>9}{figures.terms:>9}"
        f"{figures.lost:>6}{figures.duplicated:>12}{figures.in_flight:>11}{figures.recalled:>10}"
        f"{figures.extra_calls:>13}{figures.unnoted:>9}{figures.noted_twice:>10}"
        f"{figures.out_of_order:>6}{figures.seconds:>9.1f}"
    )


def misses(name: str, figures: CrashFigures) -> list[str]:
    counts = {"lost": figures.lost, "duplicated": figures.duplicated}
    counts["asked again"] = figures.recalled
    counts["answered without a daily-note line"] = figures.unnoted
    counts["with more than one daily-note line"] = figures.noted_twice
    counts["replies out of order in their chat"] = figures.out_of_order
    missed = [f"{name}: {count} {what}" for what, count in counts.items() if count]
    if figures.lost or figures.duplicated:
        missed += [f"{name}: e.g. {', '.join(figures.examples)}"]
    missed += [f"{name}: {path} does not parse" for path in figures.broken_files]
    return missed + [f"{name}: {problem}" for problem in figures.history_problems]


async def main(seed: int, runs: list[str], *, as_json: bool) -> int:
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)  # a killed bot's cut requests
    machine = machine_line()
    print(
        json.dumps({"machine": machine.removeprefix("machine: ")}) if as_json else machine,
        flush=True,
    )
    if not as_json:
        print(f"seed {seed}; extra calls: model calls beyond one a message", flush=True)
        print(COLUMNS, flush=True)
    missed: list[str] = []
    for name in runs:
        with tempfile.TemporaryDirectory(prefix="mnemo-crash-") as folder:
            figures = await crash_run(Path(folder), seed=seed, **RUNS[name])
        line = json.dumps({"run": name, **figures.line()}) if as_json else row(name, figures)
        print(line, flush=True)
        missed += misses(name, figures)
    for line in missed:
        print(json.dumps({"missed": line}) if as_json else f"missed: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS))
    parser.add_argument("--json", action="store_true", help="one JSON object a line")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.seed, arguments.runs, as_json=arguments.json)))
