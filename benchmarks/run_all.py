"""Runs every benchmark in this folder, one process each, in name order (`make bench`).

A benchmark is a `*.py` module here other than this one, run as `python -m benchmarks.<name>`
from the repository root; it prints its figures and exits non-zero when a figure misses its
goal. The exit status is the first failure's, else 0.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    status = 0
    for script in sorted(HERE.glob("*.py")):
        if script.name == Path(__file__).name:
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
