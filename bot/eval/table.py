"""The retrieval report as text: one table per dataset (each a slice), then the targets.

Rows are overall and each category, one line per system (`mnemo` as configured, then the
baselines); columns are recall@k for each k, recall@budget with its 95% interval, the tokens
spent within the budget, and answer coverage (`answers`: the share of the gold answer's words
the section shows, `bot.eval.report.coverage`; "-" for a set without answers). Under each
table: index build and query latency, and the targets of issue 31 with the figures against
them, each met or missed: `mnemo` recall@budget ≥ `OVERALL` overall, and ≥ the
`CATEGORY_TARGETS` on the categories the dataset has (multi-hop), and `mnemo` ≥ `keyword` on
every category (when the keyword baseline ran).
benchmarks/README.md shows this output as printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

OVERALL = 0.70
CATEGORY_TARGETS = {"multi-hop": 0.55}
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
    lines.extend(targets(report))
    return "\n".join(lines)


def targets(report: Figures) -> list[str]:
    """Each target: the figure, and whether it is met."""
    found = []
    overall = _recall(_row(report, "mnemo", "overall"))
    found.append(_verdict(f"recall@budget >= {OVERALL:.2f} overall", overall, overall >= OVERALL))
    for category, target in CATEGORY_TARGETS.items():
        if category in _categories(report, "mnemo"):
            value = _recall(_row(report, "mnemo", category))
            found.append(_verdict(f"{category} >= {target:.2f}", value, value >= target))
    if "keyword" in report:
        below = [
            row
            for row in ["overall", *_categories(report, "mnemo")]
            if _recall(_row(report, "mnemo", row)) < _recall(_row(report, "keyword", row))
        ]
        where = ", ".join(below) if below else "none below"
        found.append(f"target: mnemo >= keyword on every category: {where} ({_met(not below)})")
    return found


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


def _verdict(target: str, value: float, met: bool) -> str:
    return f"target: {target}: {value:.3f} ({_met(met)})"


def _met(met: bool) -> str:
    return "met" if met else "missed"


def _figures(report: Figures, system: str) -> Figures:
    return cast(Figures, report[system])


def _categories(report: Figures, system: str) -> list[str]:
    return list(cast(Mapping[str, object], _figures(report, system)["per_category"]))


def _row(report: Figures, system: str, row: str) -> Figures:
    figures = _figures(report, system)
    if row == "overall":
        return cast(Figures, figures["overall"])
    return cast(Figures, cast(Mapping[str, object], figures["per_category"])[row])


def _recall(figures: Figures) -> float:
    return cast(float, figures["recall@budget"])
