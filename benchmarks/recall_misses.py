"""Where `# Relevant Memory` loses a question's evidence (issue 21): each evidence turn of each
question, as `python -m bot eval retrieval` asks it (the shipped hits and budget), is one of

- shown: in the section;
- found, not shown: among the hits the search returned, left out of the section (the hit
  count or the token budget);
- not found, shares a word: no hit covers it, though it holds a content word of the question
  (stemmed, stop words and the chat's speaker names left out): keyword search could reach it;
- not found, shares none: no content word in common; only an embedder, or a second hop from
  another hit, can find it.

    python benchmarks/recall_misses.py [DATASET.json …] [--model PATH]
        [--embeddings-url URL --embeddings-model NAME]

Without a dataset named, the git-ignored `eval-data/realtalk.json` and `eval-data/locomo.json`
that exist (benchmarks/README.md says how to make them; with neither, it says so and stops).
With `--model` (a model2vec folder) the index is hybrid, else keyword only. Prints, per
dataset and category, the share of the evidence turns in each place.

With an embedder (`--model`, or an OpenAI-compatible `/v1/embeddings` at `--embeddings-url`,
the key in `OPENAI_API_KEY` if it needs one) it also prints a ceiling: recall (a mean over
questions, as recall@budget) of the section as run, of the embedder's N nearest single turns
of the chat (each turn embedded alone, as `Name: text`, against the question), and of both
together. The section shows ~25 turns in its 1,024 tokens, so "section + N nearest" with N
of 50 or 100 gives any fusion of the two signals two to five times the room it has.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import REPOSITORY, machine_line
from bot.eval.dataset import Conversation, Dataset, load_dataset
from bot.eval.report import Answer, Retrieved
from bot.eval.retrieval import run_mnemo
from bot.index import Embedder, Model2VecEmbedder
from bot.llm.embeddings import OpenAIEmbedder
from bot.llm.tokens import TokenCounter
from bot.memory.items.keywords import words
from bot.settings import RagSettings

DEFAULT_SETS = ("eval-data/realtalk.json", "eval-data/locomo.json")
PLACES = ("shown", "found, not shown", "not found, shares a word", "not found, shares none")
NEAREST = (15, 50, 100)


def places(dataset: Dataset, answers: Sequence[Answer]) -> Counter[tuple[str, str]]:
    """(category, place) → evidence turns, and (category, "turns") → all of them."""
    texts = {(c.id, turn.id): turn.text for c in dataset.conversations for turn in c.turns}
    names = {c.id: _names(c) for c in dataset.conversations}
    counted: Counter[tuple[str, str]] = Counter()
    for answer in answers:
        question = answer.question
        shown = _covered(answer.section.hits if answer.section else ())
        found = _covered(answer.hits)
        asked = set(words(question.text)) - names[question.conversation]
        for turn in question.evidence:
            if turn in shown:
                place = PLACES[0]
            elif turn in found:
                place = PLACES[1]
            else:
                said = set(words(texts.get((question.conversation, turn), "")))
                place = PLACES[2] if asked & said else PLACES[3]
            counted[question.category, place] += 1
            counted[question.category, "turns"] += 1
    return counted


def _names(conversation: Conversation) -> set[str]:
    return {word for _, name in conversation.names for word in words(name)}


def _covered(hits: Sequence[Retrieved]) -> set[str]:
    return {turn for hit in hits for turn in hit.turns}


def ceiling(dataset: Dataset, answers: Sequence[Answer], embedder: Embedder) -> list[str]:
    """Per category: recall of the section, of the embedder's N nearest turns, of both."""
    asked: dict[str, list[Answer]] = {}
    for answer in answers:
        asked.setdefault(answer.question.conversation, []).append(answer)
    rows: list[tuple[str, list[float]]] = []
    for conversation in dataset.conversations:
        mine = asked.get(conversation.id, [])
        if not mine:
            continue
        turns = conversation.turns
        texts = [f"{conversation.name_of(t.speaker) or t.speaker}: {t.text}" for t in turns]
        near = embedder.embed([a.question.text for a in mine]) @ embedder.embed(texts).T
        for answer, scores in zip(mine, near, strict=True):
            order = [turns[i].id for i in scores.argsort()[::-1]]
            shown = _covered(answer.section.hits if answer.section else ())
            evidence = answer.question.evidence
            marks = [_share(evidence, shown)]
            for n in NEAREST:
                top = set(order[:n])
                marks += [_share(evidence, top), _share(evidence, shown | top)]
            rows.append((answer.question.category, marks))
    heads = ["section"] + [f"{w}{n}" for n in NEAREST for w in ("nearest ", "section + ")]
    lines = [f"ceiling, {embedder.name}: recall", f"{'':24}" + "".join(f"{h:>15}" for h in heads)]
    for category in ["overall", *sorted({c for c, _ in rows})]:
        picked = [m for c, m in rows if category in ("overall", c)]
        means = [sum(column) / len(picked) for column in zip(*picked, strict=True)]
        label = f"{category} ({len(picked)})"
        lines.append(f"{label:24}" + "".join(f"{m:>15.3f}" for m in means))
    return lines


def _share(evidence: Sequence[str], covered: set[str]) -> float:
    return sum(turn in covered for turn in evidence) / max(len(evidence), 1)


def table(path: Path, counted: Counter[tuple[str, str]]) -> list[str]:
    categories = sorted({category for category, _ in counted})
    lines = [f"{path}: share of evidence turns", f"{'':24}" + "".join(f"{p:>27}" for p in PLACES)]
    for category in ["overall", *categories]:
        pick = categories if category == "overall" else [category]
        total = sum(counted[c, "turns"] for c in pick)
        shares = [sum(counted[c, p] for c in pick) / max(total, 1) for p in PLACES]
        label = f"{category} ({total})"
        lines.append(f"{label:24}" + "".join(f"{share:>27.3f}" for share in shares))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", type=Path, nargs="*")
    parser.add_argument("--model", type=Path, help="a model2vec folder: hybrid search")
    parser.add_argument("--embeddings-url", help="an OpenAI-compatible /v1 (the ceiling only)")
    parser.add_argument("--embeddings-model", default="all-MiniLM-L6-v2")
    args = parser.parse_args()
    print(machine_line())
    found = [path for name in DEFAULT_SETS if (path := REPOSITORY / name).exists()]
    datasets = args.datasets or found
    if not datasets:
        print("no dataset: make eval-data/realtalk.json first (benchmarks/README.md, REALTALK)")
        return 0
    rag = RagSettings()  # the shipped defaults
    embedder = Model2VecEmbedder(args.model) if args.model else None
    print(f"{rag.relevant_k} hits within {rag.relevant_budget_tokens} tokens;", end=" ")
    print(f"embedder {embedder.name if embedder else 'none'}")
    for path in datasets:
        dataset = load_dataset(path)
        run = run_mnemo(
            dataset,
            k=rag.relevant_k,
            budget=rag.relevant_budget_tokens,
            count=TokenCounter().count,
            embedder=embedder,
        )
        print("\n".join(table(path, places(dataset, run.answers))))
        if nearest := embedder or _endpoint(args.embeddings_url, args.embeddings_model):
            print("\n".join(ceiling(dataset, run.answers, nearest)))
    return 0


def _endpoint(url: str | None, model: str) -> Embedder | None:
    key = os.environ.get("OPENAI_API_KEY", "none")
    return OpenAIEmbedder(base_url=url, api_key=key, model=model, timeout=600) if url else None


if __name__ == "__main__":
    raise SystemExit(main())
