"""Index speed on 100,000 synthetic turns: ingest (keyword-only and with the local model2vec
embedder) and hybrid query latency. Prints its figures as JSON and exits 1 when one misses its
goal (issue 5): keyword-only ingest ≥ 20,000 turns/s, with model2vec ≥ 1,000 turns/s, hybrid
query p50 ≤ 10 ms and p95 ≤ 25 ms.

    .venv/bin/python -m benchmarks.index_speed [--turns 100000] [--queries 500]

Turns are Zipf-distributed words from the model's vocabulary (so bm25 sees common and rare
terms); 90% of them are the owner's (global scope), the rest spread over 20 group chats.
Queries are 3–6 words taken from a random turn, searched as the owner's DM would search.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.index import Exchange, MemoryIndex, Model2VecEmbedder
from bot.index.embedding import Embedder

MODEL = Path(__file__).resolve().parents[2] / "shared/models/minilm-m2v-256"
OWNER_CHAT = "telegram:1"
GROUPS = [f"telegram:-100{n}" for n in range(20)]
BATCH = 5000


def vocabulary() -> list[str]:
    tokens = json.loads((MODEL / "tokenizer.json").read_text())["model"]["vocab"]
    return [t for t in tokens if t.isalpha() and t.isascii() and len(t) >= 3]


def turns(count: int, words: list[str], rng: random.Random) -> list[Exchange]:
    weights = [1 / (rank + 10) for rank in range(len(words))]  # Zipf-like
    sample = rng.choices(words, weights, k=count * 60)
    start = datetime(2025, 11, 20, tzinfo=UTC)
    found, cursor = [], 0
    for n in range(count):
        user_len, reply_len = rng.randint(6, 20), rng.randint(15, 45)
        user = " ".join(sample[cursor : cursor + user_len])
        reply = " ".join(sample[cursor + user_len : cursor + user_len + reply_len])
        cursor += user_len + reply_len
        scope = "" if rng.random() < 0.9 else rng.choice(GROUPS)
        session = OWNER_CHAT if scope == "" else scope
        at = start + timedelta(minutes=5 * n)
        found.append(Exchange(session, f"t{n}", user, reply, scope, at))
    return found


def ingest(index: MemoryIndex, exchanges: Sequence[Exchange]) -> float:
    started = time.perf_counter()
    for start in range(0, len(exchanges), BATCH):
        index.add_exchanges(exchanges[start : start + BATCH])
    return len(exchanges) / (time.perf_counter() - started)


def latencies(index: MemoryIndex, queries: list[str], scopes: Sequence[str]) -> dict[str, float]:
    for query in queries[:20]:  # warm caches
        index.search(query, scopes=scopes, k=10)
    times = []
    for query in queries:
        started = time.perf_counter()
        index.search(query, scopes=scopes, k=10)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[int(len(times) * 0.95) - 1], 2),
        "max_ms": round(times[-1], 2),
    }


def run(
    folder: Path, exchanges: list[Exchange], queries: list[str], embedder: Embedder | None
) -> dict[str, Any]:
    index = MemoryIndex(folder / "memory", folder / "index", embedder=embedder)
    rate = ingest(index, exchanges)
    owner = latencies(index, queries, ["", OWNER_CHAT])
    group = latencies(index, queries, [GROUPS[0]])
    started = time.perf_counter()
    index.close()
    reopened = MemoryIndex(folder / "memory", folder / "index", embedder=embedder)
    reopen = time.perf_counter() - started
    reopened.close()
    return {
        "ingest_turns_per_s": round(rate),
        "owner_query": owner,
        "group_query": group,
        "reopen_s": round(reopen, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(7)
    words = vocabulary()
    exchanges = turns(args.turns, words, rng)
    queries = []
    for _ in range(args.queries):
        source = rng.choice(exchanges).text.split()[1:]
        queries.append(" ".join(rng.sample(source, min(len(source), rng.randint(3, 6)))))
    results: dict[str, Any] = {"turns": args.turns, "queries": args.queries}
    with tempfile.TemporaryDirectory() as keyword_dir:
        results["keyword_only"] = run(Path(keyword_dir), exchanges, queries, None)
    embedder = Model2VecEmbedder(MODEL)
    with tempfile.TemporaryDirectory() as hybrid_dir:
        results["hybrid_model2vec"] = run(Path(hybrid_dir), exchanges, queries, embedder)
    results["missed"] = missed(results)
    print(json.dumps(results, indent=2))
    return 1 if results["missed"] else 0


def missed(results: dict[str, Any]) -> list[str]:
    keyword, hybrid = results["keyword_only"], results["hybrid_model2vec"]
    checks = {
        "keyword-only ingest >= 20000 turns/s": keyword["ingest_turns_per_s"] >= 20_000,
        "model2vec ingest >= 1000 turns/s": hybrid["ingest_turns_per_s"] >= 1_000,
        "hybrid query p50 <= 10 ms": hybrid["owner_query"]["p50_ms"] <= 10,
        "hybrid query p95 <= 25 ms": hybrid["owner_query"]["p95_ms"] <= 25,
    }
    return [goal for goal, met in checks.items() if not met]


if __name__ == "__main__":
    sys.exit(main())
