"""The gate of replicated mode's index: PostgreSQL full text against SQLite FTS5 as the keyword
search behind `# Relevant Memory`.

    python benchmarks/pg_index_gate.py [DATASET.json …] [--ranking NAME …] [--config NAME …]

Each dataset is asked as `python -m bot eval retrieval` asks it, keyword only (the shipped
`rag.embedder`), with the shipped hits and budget: once with the bot's own index (FTS5), once
with the same index's chunks copied into PostgreSQL and searched there
(`benchmarks/pg_keywords.py`: only the candidates and the words' counts come from PostgreSQL,
the rest of the search and the section are the same code). Prints recall within the section
with its 95% interval (`bot.eval.report`, as `--table` does), overall and per category, the
paired difference with its interval, and query p50 for both. `--ranking` and `--config` name
the PostgreSQL ranking(s) and text search configuration(s) to run (`RANKINGS`,
`CONFIGURATIONS`; by default the best measured: benchmarks/README.md, "pg_index_gate").

The gate: PostgreSQL's index fails when, on any dataset, it loses by more than the interval:
its overall recall below the low end of FTS5's 95% interval, or the paired difference's whole
95% interval below zero (the same questions found less often, beyond the run's own noise);
replicated mode then keeps a per-replica SQLite index derived from the shared documents.

Datasets, by default: `tests/data/evalset_months.json` and `eval-data/realtalk.json` when it
has been made (benchmarks/README.md says how; git-ignored). The database: the server
`MNEMO_TEST_PG` names (a database of the run's own, dropped afterwards), else a private one
(initdb + pg_ctl in a tmp folder, as `tests/pg.py` starts it); with neither it prints why and
exits 0 (`make bench` runs it everywhere). Exits 0 whatever the gate says: it decides a design,
it is not a goal.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

import psycopg
import pytest

from benchmarks.common import REPOSITORY, machine_line
from benchmarks.pg_keywords import CONFIGURATIONS, RANKINGS, PgChunks, PgSearch
from bot.eval.dataset import Dataset, load_dataset
from bot.eval.interval import bootstrap
from bot.eval.report import Run, score, summary
from bot.eval.retrieval import run_mnemo
from bot.index import MemoryIndex
from bot.llm.tokens import TokenCounter
from bot.settings import RagSettings
from tests.pg import SERVER, pg_database, private_server

DEFAULT_SETS = ("tests/data/evalset_months.json", "eval-data/realtalk.json")
BEST = "ts_rank"
BEST_CONFIG = "mnemo_english"
KS = (5, 10, 20)
Figures = Mapping[str, object]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", type=Path, nargs="*", metavar="DATASET.json")
    parser.add_argument("--ranking", choices=sorted(RANKINGS), nargs="+", default=[BEST])
    parser.add_argument("--config", choices=CONFIGURATIONS, nargs="+", default=[BEST_CONFIG])
    args = parser.parse_args()
    print(machine_line(), flush=True)
    paths = args.datasets or [REPOSITORY / name for name in DEFAULT_SETS]
    for path in [p for p in paths if not p.exists()]:
        print(f"{path.relative_to(REPOSITORY)}: skipped, not made (benchmarks/README.md)")
    paths = [p for p in paths if p.exists()]
    variants = [(ranking, config) for config in args.config for ranking in args.ranking]
    try:
        return asyncio.run(gate(paths, variants))
    except pytest.skip.Exception as skipped:  # no server to run on (`tests/pg.py` says why)
        print(f"skipped: {SERVER} is unset and {skipped.msg}")
        return 0


@asynccontextmanager
async def database() -> AsyncIterator[str]:
    """A database of the run's own on `MNEMO_TEST_PG`'s server, else a private server."""
    if os.environ.get(SERVER):
        async with pg_database() as url:
            yield url
    else:
        async with private_server() as server:
            yield server.conninfo


async def gate(paths: Sequence[Path], variants: Sequence[tuple[str, str]]) -> int:
    rag = RagSettings()
    passes = True
    async with database() as url:
        with psycopg.connect(url, autocommit=True) as conn:
            for path in paths:
                dataset = load_dataset(path)
                ask = partial(run_mnemo, dataset, k=rag.relevant_k, embedder=None)
                ask = partial(ask, budget=rag.relevant_budget_tokens, count=TokenCounter().count)
                fts5 = await asyncio.to_thread(ask, system="FTS5")
                name = path.relative_to(REPOSITORY) if path.is_relative_to(REPOSITORY) else path
                print(
                    f"\n{name}: {len(dataset.questions)} questions, keyword only,"
                    f" {rag.relevant_k} hits within {rag.relevant_budget_tokens:,} tokens"
                )
                for ranking, config in variants:
                    made = partial(_copied, conn, ranking, config)
                    system = f"{ranking}, {config}"
                    pg = await asyncio.to_thread(ask, system=system, searcher=made)
                    passes &= report(dataset, fts5, pg, budget=rag.relevant_budget_tokens)
    print(f"\ngate: {'PostgreSQL index passes' if passes else 'keep per-replica SQLite'}")
    return 0


def _copied(
    conn: psycopg.Connection[tuple[object, ...]], ranking: str, config: str, index: MemoryIndex
) -> PgSearch:
    chunks = PgChunks(conn, ranking=ranking, config=config)
    chunks.load(index.store.every_row())
    return PgSearch(chunks)


def report(dataset: Dataset, fts5: Run, pg: Run, *, budget: int) -> bool:
    """The table for one ranking; whether PostgreSQL loses by no more than the interval."""
    count = TokenCounter().count
    figures = {run.system: summary(run, ks=KS, budget=budget, count=count) for run in (fts5, pg)}
    mine, theirs = figures["FTS5"], figures[pg.system]
    print(f"PostgreSQL: {pg.system}")
    print(f"{'recall@budget':<24}{'FTS5':>8}  {'95% CI':<13}{'PostgreSQL':>10}  95% CI")
    rows = ["overall", *cast(Mapping[str, object], mine["per_category"])]
    for row in rows:
        a, b = _row(mine, row), _row(theirs, row)
        label = f"{row} ({a['questions']})"
        print(f"{label:<24}{_recall(a):>8.3f}  {_ci(a):<13}{_recall(b):>10.3f}  {_ci(b)}")
    paired = [
        score(q, ks=KS, budget=budget, count=count).at_budget
        - score(f, ks=KS, budget=budget, count=count).at_budget
        for f, q in zip(fts5.answers, pg.answers, strict=True)
    ]
    low, high = bootstrap(paired)
    print(
        f"PostgreSQL - FTS5, paired: {sum(paired) / len(paired):+.3f}  ({low:+.3f} to {high:+.3f})"
    )
    print(f"query p50: FTS5 {_p50(mine)} ms, PostgreSQL {_p50(theirs)} ms")
    floor = cast(Mapping[str, Sequence[float]], _row(mine, "overall")["ci95"])["recall@budget"][0]
    within = _recall(_row(theirs, "overall")) >= floor
    verdict = "within FTS5's interval" if within else "below FTS5's interval"
    print(f"PostgreSQL overall: {verdict} (its low end {floor:.3f})")
    loses = high < 0
    said = "loses, beyond the noise" if loses else "no loss beyond the noise"
    print(f"PostgreSQL paired: {said}")
    return within and not loses


def _row(figures: Figures, row: str) -> Figures:
    if row == "overall":
        return cast(Figures, figures["overall"])
    return cast(Figures, cast(Mapping[str, object], figures["per_category"])[row])


def _recall(figures: Figures) -> float:
    return cast(float, figures["recall@budget"])


def _ci(figures: Figures) -> str:
    low, high = cast(Mapping[str, Sequence[float]], figures["ci95"])["recall@budget"]
    return f"{low:.3f}-{high:.3f}"


def _p50(figures: Figures) -> float:
    return cast(Mapping[str, float], figures["query_ms"])["p50"]


if __name__ == "__main__":
    sys.exit(main())
