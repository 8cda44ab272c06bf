"""Running the retrieval evaluation: each system answers every question with ranked hits.

`mnemo` is the bot's own index: a fresh `MemoryIndex` in a temporary workspace, fed the
dataset's exchanges (`add_exchanges`, as system 55 does) and its daily notes (`sync_files`),
asked each question exactly as a turn asks it: `RelevantMemory` with the shipped settings
(`rag.relevant_k` hits within `rag.relevant_budget_tokens`, the configured embedder), its
`find` for the chat's scope (the turn's search: 2 × k hits), and the `# Relevant Memory`
section it makes of them (`fitted`: what a better hit shows left out, headings by day,
citations, snippets; a named speaker's turn reads `Name: text`), as the model reads it:
recall@budget is what that section shows. recall@k is over the hits the search returned.
Baselines: `keyword` is the same index without the embedder (what hybrid ranking must never
fall below), `bm25` plain BM25 over single turns (`bot.eval.bm25`), one index per
conversation. Both report what each hit shows and which turns it covers (`bot.eval.corpus`);
the metrics are in `bot.eval.report`. Blocking.
"""

from __future__ import annotations

import asyncio
import functools
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from bot.eval.bm25 import BM25
from bot.eval.corpus import Corpus, build_corpus
from bot.eval.dataset import Dataset, Question
from bot.eval.report import Answer, Count, Retrieved, Run, Section, summary
from bot.index import Embedder, Hit, MemoryIndex
from bot.index.search import Fusion, Searcher
from bot.memory.recall.overlap import Shown
from bot.memory.recall.relevant import RelevantMemory, distinct
from bot.storage.files import atomic_write_text
from bot.storage.workspace import Workspace


def evaluate(
    dataset: Dataset,
    *,
    ks: Sequence[int],
    hits: int,
    budget_tokens: int,
    embedder: Embedder | None,
    baselines: Sequence[str],
    count: Count,
    fusion: Fusion = "keyword",
) -> dict[str, object]:
    """The report: the dataset's size, the settings (`hits` and `budget_tokens`: the section's,
    as `rag.relevant_k` and `rag.relevant_budget_tokens`), and each system's figures.
    Baselines: "keyword" (only beside an embedder: without one, `mnemo` is keyword search),
    "bm25"."""
    mnemo = functools.partial(
        run_mnemo, dataset, k=hits, budget=budget_tokens, count=count, fusion=fusion
    )
    runs = [mnemo(embedder=embedder)]
    if "keyword" in baselines and embedder is not None:
        runs.append(mnemo(embedder=None, system="keyword"))
    if "bm25" in baselines:
        runs.append(run_bm25(dataset, k=max(ks)))
    turns = [c.turns for c in dataset.conversations]
    return {
        "conversations": len(dataset.conversations),
        "turns": sum(len(t) for t in turns),
        "questions": len(dataset.questions),
        "k": list(ks),
        "hits": hits,
        "budget_tokens": budget_tokens,
        "embedder": embedder.name if embedder else "none",
        "fusion": fusion,
        **{run.system: summary(run, ks=ks, budget=budget_tokens, count=count) for run in runs},
    }


def run_mnemo(
    dataset: Dataset,
    *,
    k: int,
    budget: int,
    count: Count,
    embedder: Embedder | None,
    system: str = "mnemo",
    searcher: Callable[[MemoryIndex], Searcher] | None = None,
    fusion: Fusion = "keyword",
) -> Run:
    """The bot's index over the dataset, in a temporary workspace deleted afterwards, asked
    as a turn asks it: `# Relevant Memory` of at most `k` hits within `budget` tokens. The
    search is the index's own, or what `searcher` makes of the built index (another engine
    over its chunks: `benchmarks/pg_index_gate.py`); its build time is counted."""
    with tempfile.TemporaryDirectory(prefix="mnemo-eval-") as folder:
        workspace = Workspace(Path(folder) / "workspace")
        corpus = build_corpus(dataset, workspace)
        for path, text in corpus.notes.items():
            atomic_write_text(workspace.memory_root / path, text)
        root, index_dir = workspace.memory_root, workspace.root / "index"
        index = MemoryIndex(root, index_dir, embedder=embedder, fusion=fusion)
        try:
            started = time.perf_counter()
            index.add_exchanges(corpus.exchanges)
            index.sync_files()
            search = searcher(index) if searcher else _Synced(index)
            built = time.perf_counter() - started
            relevant = RelevantMemory(search, count, k=k, budget_tokens=budget)
            answers = asyncio.run(_ask_all(relevant, corpus, dataset.questions))
            return Run(system, answers, built, index.stats().chunks)
        finally:
            index.close()


@dataclass(eq=False)
class _Synced:
    """The index as a turn's `RelevantMemory` searches it (`IndexService.search`): synced
    already, so there is nothing to wait for."""

    index: MemoryIndex

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        k: int,
        wait: Literal["all", "walks"] = "all",
        now: datetime | None = None,
    ) -> list[Hit]:
        return self.index.search(query, scopes=scopes, k=k, now=now)


async def _ask_all(
    relevant: RelevantMemory, corpus: Corpus, questions: Sequence[Question]
) -> tuple[Answer, ...]:
    return tuple([await _ask(relevant, corpus, question) for question in questions])


async def _ask(relevant: RelevantMemory, corpus: Corpus, question: Question) -> Answer:
    scopes = [corpus.scopes[question.conversation]]
    started = time.perf_counter()
    found = await relevant.find(question.text, scopes, now=asked_at(question))
    seconds = time.perf_counter() - started
    text, shown = relevant.fitted(found, shown=Shown())
    section = Section(text, tuple(Retrieved(hit.text, corpus.covered(hit)) for hit in shown))
    ranked = tuple(Retrieved(hit.text, corpus.covered(hit)) for hit in distinct(found))
    return Answer(question, ranked, seconds, section)


def asked_at(question: Question) -> datetime | None:
    """The end of the day the question is asked, when the dataset gives one."""
    if question.asked is None:
        return None
    day = question.asked
    return datetime(day.year, day.month, day.day, 23, 59, tzinfo=UTC)


def run_bm25(dataset: Dataset, *, k: int) -> Run:
    """The baseline: each conversation's turns as documents, each hit one whole turn."""
    started = time.perf_counter()
    indexes = {c.id: (c.turns, BM25([t.text for t in c.turns])) for c in dataset.conversations}
    built = time.perf_counter() - started
    answers = []
    for question in dataset.questions:
        turns, bm25 = indexes[question.conversation]
        started = time.perf_counter()
        ranked = bm25.search(question.text, k=k)
        seconds = time.perf_counter() - started
        hits = tuple(Retrieved(turns[n].text, frozenset({turns[n].id})) for n, _ in ranked)
        answers.append(Answer(question, hits, seconds))
    return Run("bm25", tuple(answers), built, {"turn": sum(len(t) for t, _ in indexes.values())})
