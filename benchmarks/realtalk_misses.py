"""Where a dataset's evidence is lost on the way to `# Relevant Memory` (issue 21).

    python benchmarks/realtalk_misses.py eval-data/realtalk.json [--category multi-hop ...]

Each evidence turn of the questions asked is put in the first of four places it reaches, with
the shipped defaults, keyword search (the index without an embedder): **shown** in the section
(`rag.relevant_k` hits within `rag.relevant_budget_tokens`, as `bot eval retrieval` builds
it); **found, cut**: in the hits the search returned but not in the section; **ranked out**: in
the same search with `WIDE_CANDIDATES` keyword candidates (every chunk that holds a query
term, in practice); **never a candidate**: in none of those. Also where each place's turns sat
in the wide search (quartiles), and what the section spent: hits, tokens, tokens a hit line.
Read only by people: it prints, and fails on nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import bot.index.memory_index as memory_index
from bot.eval.corpus import Corpus, build_corpus
from bot.eval.dataset import Question, load_dataset
from bot.eval.retrieval import _Synced, asked_at
from bot.index import Hit, MemoryIndex
from bot.llm.tokens import TokenCounter
from bot.memory.recall.overlap import Shown
from bot.memory.recall.relevant import RelevantMemory, distinct, hit_line
from bot.settings import RagSettings
from bot.storage.files import atomic_write_text
from bot.storage.workspace import Workspace

WIDE_CANDIDATES = 600
PLACES = ("shown", "found, cut", "ranked out", "never a candidate")


@dataclass
class Tally:
    questions: int = 0
    turns: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PLACES, 0))
    where: dict[str, list[int]] = field(default_factory=lambda: {p: [] for p in PLACES})
    hits: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    line_tokens: list[int] = field(default_factory=list)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--category", nargs="*", default=["multi-hop", "open-domain"])
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset)
    asked = [q for q in dataset.questions if q.category in args.category]
    tallies: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-misses-") as folder:
        workspace = Workspace(Path(folder) / "workspace")
        corpus = build_corpus(dataset, workspace)
        for path, text in corpus.notes.items():
            atomic_write_text(workspace.memory_root / path, text)
        index = MemoryIndex(workspace.memory_root, workspace.root / "index", embedder=None)
        try:
            index.add_exchanges(corpus.exchanges)
            index.sync_files()
            for question in asked:
                tally = tallies.setdefault(question.category, Tally())
                place(question, index, corpus, tally)
        finally:
            index.close()
    for category, tally in sorted(tallies.items()):
        report(category, tally)


def place(question: Question, index: MemoryIndex, corpus: Corpus, tally: Tally) -> None:
    rag, count = RagSettings(), TokenCounter().count
    relevant = RelevantMemory(
        _Synced(index), count, k=rag.relevant_k, budget_tokens=rag.relevant_budget_tokens
    )
    scopes, now = [corpus.scopes[question.conversation]], asked_at(question)
    found = asyncio.run(relevant.find(question.text, scopes, now=now))
    text, shown = relevant.fitted(found, shown=Shown())
    default = getattr(memory_index, "CANDIDATES")  # noqa: B009 (a name it imports)
    setattr(memory_index, "CANDIDATES", WIDE_CANDIDATES)  # noqa: B010 (this script only)
    try:
        wide = index.search(question.text, scopes=scopes, k=2 * WIDE_CANDIDATES, now=now)
    finally:
        setattr(memory_index, "CANDIDATES", default)  # noqa: B010
    held = [_covered(corpus, shown), _covered(corpus, distinct(found)), _covered(corpus, wide)]
    for turn in question.evidence:
        at = next((n for n, hits in enumerate(held) if turn in hits), len(PLACES) - 1)
        tally.turns[PLACES[at]] += 1
        spot = next((n for n, hit in enumerate(wide) if turn in corpus.covered(hit)), None)
        if spot is not None:
            tally.where[PLACES[at]].append(spot + 1)
    tally.questions += 1
    tally.hits.append(len(shown))
    tally.tokens.append(count(text))
    tally.line_tokens.extend(count(hit_line(hit)) for hit in shown)


def _covered(corpus: Corpus, hits: Sequence[Hit]) -> set[str]:
    return {turn for hit in hits for turn in corpus.covered(hit)}


def report(category: str, tally: Tally) -> None:
    total = sum(tally.turns.values())
    print(f"{category}: {tally.questions} questions, {total} evidence turns")
    for name in PLACES:
        spots = tally.where[name]
        quartiles = statistics.quantiles(spots, n=4) if len(spots) > 1 else spots
        print(
            f"  {name:18} {tally.turns[name]:5} ({tally.turns[name] / max(total, 1):.0%})"
            f"  place in the wide search, quartiles: {[round(q) for q in quartiles]}"
        )
    lines = tally.line_tokens or [0]
    print(
        f"  section: {statistics.mean(tally.hits):.1f} hits, {statistics.mean(tally.tokens):.0f}"
        f" tokens; a hit line {statistics.mean(lines):.0f} tokens (median"
        f" {statistics.median(lines):.0f})"
    )


if __name__ == "__main__":
    main()
