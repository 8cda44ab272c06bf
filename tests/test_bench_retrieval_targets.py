"""benchmarks/retrieval_targets.py: issue 31's targets beside the eval's table, each met or
missed, before the keyword comparison."""

from __future__ import annotations

from benchmarks.retrieval_targets import with_targets


def _figures(recall: float) -> dict[str, object]:
    row = {
        "questions": 4,
        "recall@1": recall,
        "recall@budget": recall,
        "ci95": {"recall@budget": [recall, recall]},
        "budget_tokens": 100.0,
    }
    return {
        "overall": row,
        "per_category": {"multi-hop": row},
        "index_build_s": 0.1,
        "query_ms": {"p50": 1.0, "p95": 2.0},
    }


def report(mnemo: float, keyword: float) -> dict[str, object]:
    return {
        "dataset": "set.json",
        "conversations": 1,
        "turns": 10,
        "questions": 4,
        "embedder": "e",
        "hits": 5,
        "budget_tokens": 100,
        "k": [1],
        "mnemo": _figures(mnemo),
        "keyword": _figures(keyword),
    }


def test_the_targets_stand_before_the_keyword_comparison_each_met_or_missed() -> None:
    text, met = with_targets(report(0.6, 0.5))
    lines = text.splitlines()
    assert lines[-3:] == [
        "target: recall@budget >= 0.70 overall: 0.600 (missed)",
        "target: multi-hop >= 0.55: 0.600 (met)",
        "target: mnemo >= keyword on every category: none below (met)",
    ]
    assert not met
    assert with_targets(report(0.8, 0.9))[1]
