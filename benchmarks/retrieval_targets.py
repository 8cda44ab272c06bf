"""Issue 31's recall targets, against the figures `python -m bot eval retrieval` measures: `mnemo`
recall@budget ≥ `OVERALL` overall, and ≥ `CATEGORY_TARGETS` on the categories a dataset has.

    python benchmarks/retrieval_targets.py [DATASET.json …] [eval retrieval's options]

Without arguments, the datasets of benchmarks/README.md's issue 31 section that exist
(`eval-data/realtalk.json` is git-ignored; the README says how to make it) at the default
model's window, keyword only: `--embedder none --window 131072`. Prints each dataset's table
as `--table` does, with the targets' lines among its own (before the keyword comparison, when
that baseline ran), each met or missed; exits 1 when one is missed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import REPOSITORY
from bot.eval.table import Figures, categories, recall, table

OVERALL = 0.70
CATEGORY_TARGETS = {"multi-hop": 0.55}
DATASETS = ("eval-data/realtalk.json", "tests/data/evalset_months.json", "tests/data/evalset.json")
OPTIONS = ("--embedder", "none", "--window", "131072")


def targets(report: Figures) -> list[tuple[str, bool]]:
    """Each target's line (the figure against it) and whether it is met."""
    goals = [(f"recall@budget >= {OVERALL:.2f} overall", "overall", OVERALL)]
    goals += [
        (f"{category} >= {goal:.2f}", category, goal)
        for category, goal in CATEGORY_TARGETS.items()
        if category in categories(report)
    ]
    found = []
    for target, row, goal in goals:
        value = recall(report, row)
        found.append((f"target: {target}: {value:.3f} ({_met(value >= goal)})", value >= goal))
    return found


def _met(met: bool) -> str:
    return "met" if met else "missed"


def with_targets(report: Figures) -> tuple[str, bool]:
    """The report's table with the targets' lines, and whether all are met."""
    lines = table(report).splitlines()
    keyword = [n for n, line in enumerate(lines) if line.startswith("target: mnemo >= keyword")]
    at = keyword[0] if keyword else len(lines)
    found = targets(report)
    lines[at:at] = [line for line, _ in found]
    return "\n".join(lines), all(met for _, met in found)


def reports(arguments: Sequence[str]) -> list[Figures]:
    """The eval's reports over `arguments` (its JSON, one report or `{"slices": […]}`)."""
    command = [sys.executable, "-m", "bot", "eval", "retrieval", *arguments]
    done = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, check=True)
    found: Mapping[str, object] = json.loads(done.stdout)
    slices = found.get("slices")
    return list(slices) if isinstance(slices, list) else [found]


def main(argv: Sequence[str]) -> int:
    arguments = list(argv)
    if not arguments:
        arguments = [d for d in DATASETS if (REPOSITORY / d).is_file()] + list(OPTIONS)
    printed = [with_targets(report) for report in reports(arguments)]
    print("\n\n".join(text for text, _ in printed))
    return 0 if all(met for _, met in printed) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
