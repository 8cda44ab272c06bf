"""Runs every benchmark in this folder, one process each, in name order (`make bench`).

A benchmark is a `*.py` module here other than this one and `common.py`, run as
`python -m benchmarks.<name>` from the repository root; it prints its figures and exits non-zero
when a figure misses its goal. The machine line (cores, load, Python) comes once at the top, and
again in each benchmark's output. The exit status is the first failure's, else 0.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import machine_line

HERE = Path(__file__).resolve().parent
NOT_BENCHMARKS = {"run_all", "common"}  # this runner, and what the benchmarks share


def main() -> int:
    print(machine_line(), flush=True)
    status = 0
    for script in sorted(HERE.glob("*.py")):
        if script.stem in NOT_BENCHMARKS:
            continue
        print(f"== {script.stem}", flush=True)
        started = time.perf_counter()
        command = [sys.executable, "-m", f"{HERE.name}.{script.stem}"]
        code = subprocess.run(command, cwd=HERE.parent, check=False).returncode
        seconds = time.perf_counter() - started
        print(f"== {script.stem}: exit {code} in {seconds:.1f} s\n", flush=True)
        status = status or code
    return status


if __name__ == "__main__":
    sys.exit(main())
