"""Running the retrieval evaluation: each system answers every question with ranked hits.

`mnemo` is the bot's own index: a fresh `MemoryIndex` in a temporary workspace, fed the
dataset's exchanges (`add_exchanges`, as system 55 does) and its daily notes (`sync_files`),
asked each question as `# Relevant Memory` asks (`search(question, scopes=[the chat's],
k=PROBE_PER_HIT × k)`); its hits are kept as that section keeps them (`distinct`: what a
better hit shows is left out), and the section itself is made of them within the budget
(`fit`: headings by day, citations, snippets; a named speaker's turn reads `Name: text`),
as the model reads it: recall@budget is what that section shows. Baselines: `keyword` is the
same index without the embedder (what hybrid ranking must never fall below), `bm25` plain
BM25 over single turns (`bot.eval.bm25`), one index per conversation. Both report what each
hit shows and which turns it covers (`bot.eval.corpus`); the metrics are in
`bot.eval.report`. Blocking.
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bot.eval.bm25 import BM25
from bot.eval.corpus import Corpus, build_corpus
from bot.eval.dataset import Dataset, Question
from bot.eval.report import Answer, Count, Retrieved, Run, Section, summary
from bot.index import Embedder, MemoryIndex
from bot.memory.recall.relevant import PROBE_PER_HIT, distinct, fit
from bot.storage.files import atomic_write_text
from bot.storage.workspace import Workspace


def evaluate(
    dataset: Dataset,
    *,
    ks: Sequence[int],
    budget_tokens: int,
    embedder: Embedder | None,
    baselines: Sequence[str],
    count: Count,
) -> dict[str, object]:
    """The report: the dataset's size, the settings, and each system's figures. Baselines:
    "keyword" (only beside an embedder: without one, `mnemo` is keyword search), "bm25"."""
    mnemo = functools.partial(run_mnemo, dataset, k=max(ks), budget=budget_tokens, count=count)
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
        "budget_tokens": budget_tokens,
        "embedder": embedder.name if embedder else "none",
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
) -> Run:
    """The bot's index over the dataset, in a temporary workspace deleted afterwards."""
    with tempfile.TemporaryDirectory(prefix="mnemo-eval-") as folder:
        workspace = Workspace(Path(folder) / "workspace")
        corpus = build_corpus(dataset, workspace)
        for path, text in corpus.notes.items():
            atomic_write_text(workspace.memory_root / path, text)
        index = MemoryIndex(workspace.memory_root, workspace.root / "index", embedder=embedder)
        try:
            started = time.perf_counter()
            index.add_exchanges(corpus.exchanges)
            index.sync_files()
            built = time.perf_counter() - started
            ask = functools.partial(_ask, index, corpus, k=k, budget=budget, count=count)
            answers = tuple(ask(q) for q in dataset.questions)
            return Run(system, answers, built, index.stats().chunks)
        finally:
            index.close()


def _ask(
    index: MemoryIndex,
    corpus: Corpus,
    question: Question,
    *,
    k: int,
    budget: int,
    count: Count,
) -> Answer:
    scopes = [corpus.scopes[question.conversation]]
    started = time.perf_counter()
    found = index.search(question.text, scopes=scopes, k=PROBE_PER_HIT * k, now=asked_at(question))
    seconds = time.perf_counter() - started
    hits = distinct(found)
    text, shown = fit(hits, k=len(hits), budget=budget, count=count)
    section = Section(text, tuple(Retrieved(hit.text, corpus.covered(hit)) for hit in shown))
    ranked = tuple(Retrieved(hit.text, corpus.covered(hit)) for hit in hits)
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
