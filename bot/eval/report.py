"""A system's run over the questions (`Run`: each answer's hits and the turns they show) and its
figures, as JSON-ready values: recall@k and recall@budget, overall and per category, index build
time and query latency.

A question's recall is the share of its evidence turns covered by the hits considered:

- recall@k: the first k hits;
- recall@budget: what the system shows within the token budget, counted with `TokenCounter`.
  For the bot, its own `# Relevant Memory` section of that budget (`Answer.section`: headings,
  days, citations and snippets, every token counted); for a baseline, the hits that fit taken
  best first over the text each shows (a hit that does not fit is passed over and a smaller one
  after it may still fit, as `# Relevant Memory` fills its own).

Answer coverage (`coverage`), beside recall: the share of the gold answer's content words
(`answer_words`: stemmed as `bot.eval.bm25` stems, less stop words and the question's own
words, which any hit repeats) present in what the system shows within the budget, a model-free
proxy of what a model could answer from. Only questions whose dataset gives an answer with such
a word are counted (`answered`: how many); a set without answers reports none.

Overall and per-category figures are means over questions, each recall with its 95%
confidence interval in `ci95` (`bot.eval.interval`: a bootstrap over the questions);
`budget_hits` and `budget_tokens` are the mean number of hits and tokens that went into the
budget. Latency is per search,
nearest-rank percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bot.eval.bm25 import stem, terms
from bot.eval.dataset import Question
from bot.eval.interval import bootstrap
from bot.index.query import STOP_WORDS, WORD

Count = Callable[[str], int]  # tokens in a text


@dataclass(frozen=True)
class Retrieved:
    """One hit: the text it puts in front of the model, and the turns that text covers."""

    text: str
    turns: frozenset[str]


@dataclass(frozen=True)
class Section:
    """What a system puts in front of the model within the budget, as one text."""

    text: str
    hits: tuple[Retrieved, ...]  # the hits it shows


@dataclass(frozen=True)
class Answer:
    question: Question
    hits: tuple[Retrieved, ...]  # best first
    seconds: float  # how long the search took
    section: Section | None = None  # None: the hits fill the budget (see above)


@dataclass(frozen=True)
class Run:
    system: str
    answers: tuple[Answer, ...]
    build_seconds: float  # indexing only (not writing the note files, not loading a model)
    chunks: Mapping[str, int]  # what was indexed, per kind


@dataclass(frozen=True)
class Scored:
    """One question's figures."""

    category: str
    at_k: tuple[float, ...]  # in the order of the ks asked for
    at_budget: float
    budget_hits: int
    budget_tokens: int
    coverage: float | None = None  # of the answer's words; None: no answer to score


def summary(run: Run, *, ks: Sequence[int], budget: int, count: Count) -> dict[str, object]:
    scored = [score(answer, ks=ks, budget=budget, count=count) for answer in run.answers]
    categories = sorted({s.category for s in scored})
    latencies = [answer.seconds * 1000 for answer in run.answers]
    return {
        "overall": _means(scored, ks),
        "per_category": {c: _means([s for s in scored if s.category == c], ks) for c in categories},
        "index_build_s": round(run.build_seconds, 3),
        "query_ms": {
            "p50": _ms(percentile(latencies, 0.5)),
            "p95": _ms(percentile(latencies, 0.95)),
        },
        "indexed": dict(run.chunks),
    }


def score(answer: Answer, *, ks: Sequence[int], budget: int, count: Count) -> Scored:
    evidence = frozenset(answer.question.evidence)
    at_k = tuple(recall(evidence, [hit.turns for hit in answer.hits[:k]]) for k in ks)
    wanted = answer_words(answer.question)
    if (section := answer.section) is not None:
        shown = [hit.turns for hit in section.hits]
        return Scored(
            answer.question.category,
            at_k,
            recall(evidence, shown),
            len(shown),
            count(section.text),
            coverage(wanted, section.text),
        )
    used, tokens, covered, texts = 0, 0, [], []
    for hit in answer.hits:
        size = count(hit.text)
        if tokens + size <= budget:
            used, tokens = used + 1, tokens + size
            covered.append(hit.turns)
            texts.append(hit.text)
    found = recall(evidence, covered)
    shown_text = "\n".join(texts)
    return Scored(answer.question.category, at_k, found, used, tokens, coverage(wanted, shown_text))


def answer_words(question: Question) -> frozenset[str]:
    """The gold answer's content words, stemmed, that the question does not say itself."""
    if question.answer is None:
        return frozenset()
    asked = set(terms(question.text))
    words = WORD.findall(question.answer.lower())
    said = (stem(word) for word in words if word not in STOP_WORDS and len(word) > 1)
    return frozenset(word for word in said if word not in asked)


def coverage(wanted: frozenset[str], shown: str) -> float | None:
    """The share of `wanted` among the words of `shown`; None when nothing is wanted."""
    if not wanted:
        return None
    return len(wanted & set(terms(shown))) / len(wanted)


def recall(evidence: frozenset[str], covered: Sequence[frozenset[str]]) -> float:
    """The share of `evidence` in the union of `covered`."""
    if not evidence:
        return 0.0
    found: frozenset[str] = frozenset().union(*covered)
    return len(evidence & found) / len(evidence)


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest rank: the smallest value with at least `share` of all values at or below it."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _means(scored: Sequence[Scored], ks: Sequence[int]) -> dict[str, object]:
    recalls = {f"recall@{k}": [s.at_k[n] for s in scored] for n, k in enumerate(ks)}
    recalls["recall@budget"] = [s.at_budget for s in scored]
    figures: dict[str, object] = {"questions": len(scored)}
    figures.update((name, _mean(values)) for name, values in recalls.items())
    figures["budget_hits"] = _mean([s.budget_hits for s in scored], digits=1)
    figures["budget_tokens"] = _mean([s.budget_tokens for s in scored], digits=0)
    intervals = {name: _interval(values) for name, values in recalls.items()}
    covered = [s.coverage for s in scored if s.coverage is not None]
    figures["answered"] = len(covered)
    if covered:
        figures["answer_coverage"] = _mean(covered)
        intervals["answer_coverage"] = _interval(covered)
    figures["ci95"] = intervals
    return figures


def _interval(values: Sequence[float]) -> list[float]:
    return [round(bound, 3) for bound in bootstrap(values)]


def _mean(values: Sequence[float], *, digits: int = 3) -> float:
    return round(sum(values) / len(values), digits) if values else 0.0


def _ms(value: float) -> float:
    return round(value, 2)
