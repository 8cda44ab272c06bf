"""The retrieval report as text: one table per dataset (each a slice).

Rows are overall and each category, one line per system (`mnemo` as configured, then the
baselines); columns are recall@k for each k, recall@budget with its 95% interval, the tokens
spent within the budget, and answer coverage (`answers`: the share of the gold answer's words
the section shows, `bot.eval.report.coverage`; "-" for a set without answers). Under each
table: index build and query latency, and (when the keyword baseline ran) whether `mnemo` is at
least `keyword` on every category. The recall targets measured against these figures are the
benchmarks' (`benchmarks/retrieval_targets.py`, which prints this table with them);
benchmarks/README.md shows its output as printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

BASELINES = ("keyword", "bm25")
Figures = Mapping[str, object]
_LABEL = 24  # "knowledge-update (120)"


def table(report: Figures) -> str:
    """One dataset's report (as `bot.eval.retrieval.evaluate` makes it) as text."""
    ks = cast(Sequence[int], report["k"])
    systems = [s for s in ("mnemo", *BASELINES) if s in report]
    lines = [_title(report), _header(ks)]
    mnemo = _figures(report, "mnemo")
    rows = ["overall", *cast(Mapping[str, object], mnemo["per_category"])]
    for row in rows:
        for n, system in enumerate(systems):
            figures = _row(report, system, row)
            label = f"{row} ({figures['questions']})" if n == 0 else ""
            lines.append(_line(label, system, figures, ks))
    lines.extend(_timing(report, system) for system in systems)
    if "keyword" in report:
        lines.append(_against_keyword(report))
    return "\n".join(lines)


def _against_keyword(report: Figures) -> str:
    """Whether `mnemo` recalls at least what keyword search alone does, on every row."""
    below = [
        row
        for row in ["overall", *categories(report)]
        if recall(report, row) < recall(report, row, system="keyword")
    ]
    where = ", ".join(below) if below else "none below"
    return f"target: mnemo >= keyword on every category: {where} ({'missed' if below else 'met'})"


def categories(report: Figures, system: str = "mnemo") -> list[str]:
    """The report's categories, as `system`'s figures have them."""
    return list(cast(Mapping[str, object], _figures(report, system)["per_category"]))


def recall(report: Figures, row: str, *, system: str = "mnemo") -> float:
    """recall@budget of `system` on `row` ("overall" or a category)."""
    return _recall(_row(report, system, row))


def _title(report: Figures) -> str:
    return (
        f"{report.get('dataset', 'dataset')}: {report['conversations']} conversations,"
        f" {report['turns']:,} turns, {report['questions']} questions;"
        f" embedder {report['embedder']}{_fused(report)}; {report['hits']} hits within"
        f" {report['budget_tokens']:,} tokens"
    )


def _fused(report: Figures) -> str:
    return " (fused by rank)" if report.get("fusion") == "ranks" else ""


def _header(ks: Sequence[int]) -> str:
    at = "".join(f"{f'recall@{k}' if n == 0 else f'@{k}':>9}" for n, k in enumerate(ks))
    return f"{'':<{_LABEL}}{'':<8}{at}{'@budget':>9}  {'95% CI':<13}{'tokens':>7}{'answers':>9}"


def _line(label: str, system: str, figures: Figures, ks: Sequence[int]) -> str:
    at = "".join(f"{cast(float, figures[f'recall@{k}']):>9.3f}" for k in ks)
    low, high = cast(Mapping[str, Sequence[float]], figures["ci95"])["recall@budget"]
    covered = figures.get("answer_coverage")
    answers = "-" if covered is None else f"{cast(float, covered):.3f}"
    return (
        f"{label:<{_LABEL}}{system:<8}{at}{_recall(figures):>9.3f}  {f'{low:.3f}-{high:.3f}':<13}"
        f"{cast(float, figures['budget_tokens']):>7.0f}{answers:>9}"
    )


def _timing(report: Figures, system: str) -> str:
    figures = _figures(report, system)
    query = cast(Mapping[str, float], figures["query_ms"])
    return (
        f"{system}: index build {figures['index_build_s']} s,"
        f" query p50 {query['p50']} ms, p95 {query['p95']} ms"
    )


def _figures(report: Figures, system: str) -> Figures:
    return cast(Figures, report[system])


def _row(report: Figures, system: str, row: str) -> Figures:
    figures = _figures(report, system)
    if row == "overall":
        return cast(Figures, figures["overall"])
    return cast(Figures, cast(Mapping[str, object], figures["per_category"])[row])


def _recall(figures: Figures) -> float:
    return cast(float, figures["recall@budget"])
