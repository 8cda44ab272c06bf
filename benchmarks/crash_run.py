"""Crash figures: messages, stops, lost, duplicated, asked again (issue 9).

    .venv/bin/python -m benchmarks.crash_run [--seed 1]

The bot as a process (`python -m bot run`) against the fake Bot API and model (`tests/crash.py`
holds the run and what it counts). Two runs:

- bursts: 200 messages over 3 chats, 18 stops at random points (every third a SIGTERM, the
  rest SIGKILL), as the fault run in issue 9 measured it (10 lost before);
- flood: 1,000 messages from 20 chats arriving at once, 3 stops, each a SIGTERM
  (614 lost before with a 10 s grace).

Exit 1 when a message is lost, answered twice, or asked of the model again after its answer was
saved; or a file does not parse; or the HISTORY files disagree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

from tests.crash import CrashFigures, crash_run

RUNS = {
    "bursts": {"chats": 3, "messages": 200, "stops": 18, "sigterm_every": 3},
    "flood": {"chats": 20, "messages": 1000, "stops": 3, "sigterm_every": 1},
}


def failed(figures: CrashFigures) -> bool:
    broken = figures.broken_files or figures.history_problems
    return bool(figures.lost or figures.duplicated or figures.recalled or broken)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    status = 0
    for name, shape in RUNS.items():
        with tempfile.TemporaryDirectory() as folder:
            figures = await crash_run(Path(folder), seed=args.seed, **shape)
        print(json.dumps({"run": name, **figures.line()}), flush=True)
        status = status or int(failed(figures))
    return status


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
