"""Fusion that cannot hurt: keyword hits keep their places whatever the embedder says; vectors
fill what keyword search leaves. Unit rules, a hostile embedder on a real index, and the
evaluation's categories with a noise embedder and the tests' small model."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from benchmarks.evalsets.synthetic import generate
from bot.eval.dataset import Dataset, load_dataset, parse_dataset
from bot.eval.report import summary
from bot.eval.retrieval import run_mnemo
from bot.index import Document, Embedder, MemoryIndex, Model2VecEmbedder
from bot.index.embedding import Vectors, normalised
from bot.index.search import CANDIDATES, Fused, fuse, rank
from bot.index.store import ChunkRow
from tests.harness import REPO, SMALL_MODEL2VEC

NOW = datetime(2026, 11, 25, tzinfo=UTC)
EVALSET = REPO / "tests" / "data" / "evalset.json"


class NoiseEmbedder:
    """Every text a random unit vector (the same text, the same vector): knows nothing."""

    name = "noise"
    dim = 32

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = [np.random.default_rng(zlib.crc32(t.encode())).normal(size=self.dim) for t in texts]
        return normalised(np.array(rows).reshape(len(texts), self.dim))


class DecoyEmbedder:
    """Hostile: a text with "decoy" in it is the query's exact match, everything else is far."""

    name = "decoy"
    dim = 2

    def __init__(self) -> None:
        self.queries: set[str] = set()

    def embed(self, texts: Sequence[str]) -> Vectors:
        near = [("decoy" in t or t in self.queries) for t in texts]
        return np.array([[1.0, 0.0] if n else [0.0, 1.0] for n in near], dtype=np.float32)


# ----------------------------------------------------------------------------- the rule


def test_keyword_candidates_keep_their_order_and_vectors_continue_after_them() -> None:
    fused = fuse([7, 3, 5], [9, 3, 8])

    assert sorted(fused.scores, key=lambda i: -fused.scores[i]) == [7, 3, 5, 9, 8]
    assert fused.scores[3] == pytest.approx(1 / 62), "agreeing vectors add nothing"
    assert fused.scores[8] == pytest.approx(1 / 65)
    assert fused.ahead == {7, 3, 5}


def test_without_keyword_candidates_the_vectors_rank_alone() -> None:
    fused = fuse([], [4, 2])
    assert fused.scores == {4: pytest.approx(1 / 61), 2: pytest.approx(1 / 62)}
    assert fused.ahead == frozenset()


def test_a_vague_query_fuses_both_lists_by_reciprocal_rank() -> None:
    fused = fuse([1, 2, 3], [3, 4], vague=True)

    assert max(fused.scores, key=lambda i: fused.scores[i]) == 3
    assert fused.scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert fused.ahead == frozenset()


def test_the_chunks_of_a_named_time_come_first_and_stay_ahead() -> None:
    fused = fuse([5, 6], [8], dated=[7, 5])

    assert sorted(fused.scores, key=lambda i: -fused.scores[i]) == [7, 5, 6, 8]
    assert fused.ahead == {7, 5, 6}
    assert fused.dated == {7, 5}


def test_fused_by_rank_a_vector_candidate_both_lists_agree_on_comes_first() -> None:
    """`rag.fusion = "ranks"`: the lists compete (an embedder good enough to earn it); only
    the chunks of a named time stay ahead."""
    keyword_first = fuse([1, 2, 3], [3, 4])
    ranks = fuse([1, 2, 3], [3, 4], fusion="ranks")
    assert max(keyword_first.scores, key=lambda i: keyword_first.scores[i]) == 1
    assert max(ranks.scores, key=lambda i: ranks.scores[i]) == 3
    assert ranks.scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert ranks.ahead == frozenset()
    dated = fuse([1, 2], [3], dated=[2], fusion="ranks")
    assert dated.ahead == {2}
    assert dated.dated == {2}
    assert fuse([1, 2], [], fusion="ranks") == fuse([1, 2]), "keyword alone: nothing to fuse"


def row(chunk_id: int, *, at: datetime, salience: float) -> ChunkRow:
    path = f"note-{chunk_id}.md"
    return ChunkRow(chunk_id, path, 1, 1, "", "note", at.timestamp(), salience, f"text {chunk_id}")


def test_no_tie_break_lifts_a_vector_candidate_over_a_keyword_one() -> None:
    rows = {
        1: row(1, at=NOW - timedelta(days=900), salience=0.0),  # old, dull, found by keyword
        2: row(2, at=NOW, salience=1.0),  # new, salient, found only by vectors
    }
    hits = rank(fuse([1], [2]), rows, weights={}, now=NOW.timestamp(), k=2)
    assert [h.path for h in hits] == ["note-1.md", "note-2.md"]

    hits = rank(Fused({1: 1 / 61, 2: 1 / 61}), rows, weights={}, now=NOW.timestamp(), k=2)
    assert hits[0].path == "note-2.md", "without the rule the tie-break would decide"


# ----------------------------------------------------------------------------- a real index

FACTS = {
    "violin": "Mia practises the violin every evening before dinner.",
    "tyres": "The car needs new winter tyres before December.",
    "lisbon": "Booked flights to Lisbon for the spring holiday.",
}


@pytest.fixture
def decoy_index(tmp_path: Path) -> Iterator[tuple[MemoryIndex, DecoyEmbedder]]:
    embedder = DecoyEmbedder()
    index = MemoryIndex(tmp_path / "memory", tmp_path / "index", embedder=embedder)
    for key, fact in FACTS.items():
        index.add_document(key, fact, "", at=NOW - timedelta(days=400), salience=0.0)
    for n in range(30):
        index.add_document(f"decoy-{n}", f"decoy note {n} about nothing", "", at=NOW, salience=1)
    yield index, embedder
    index.close()


def test_a_hostile_embedder_cannot_push_keyword_hits_out(
    decoy_index: tuple[MemoryIndex, DecoyEmbedder],
) -> None:
    index, embedder = decoy_index
    query = "violin practice and winter tyres"
    embedder.queries.add(query)

    hits = index.search(query, scopes=[""], k=4)

    paths = [h.path for h in hits]
    assert paths[:2] in (["items/violin", "items/tyres"], ["items/tyres", "items/violin"])
    assert all(path.startswith("items/decoy-") for path in paths[2:]), "decoys only fill"
    assert len(paths) == 4


def test_a_match_on_the_chat_s_common_name_alone_leaves_room_for_the_vectors(
    tmp_path: Path,
) -> None:
    """Every chunk of the chat says "Grace": a match on her name alone is no evidence, so it
    is no keyword candidate and the vector candidate (here a hostile one) fills; a telling
    word's match still ranks before it."""
    embedder = DecoyEmbedder()
    index = MemoryIndex(tmp_path / "memory", tmp_path / "index", embedder=embedder)
    chat, other = "telegram:-1001", "telegram:-1002"
    for n in range(24):
        index.add_document(f"grace-{n}", f"Grace: small talk number {n}.", chat)
        index.add_document(f"other-{n}", f"Ben: weather report {n}.", other)
    index.add_document("violin", "Grace: my violin lesson went well.", chat)
    index.add_document("decoy", "a decoy note about nothing", chat)
    query = "what did Grace play"
    embedder.queries.add(query)
    assert index.search(query, scopes=[chat], k=2)[0].path == "items/decoy"

    query = "Grace violin"
    embedder.queries.add(query)
    paths = [h.path for h in index.search(query, scopes=[chat], k=3)]
    index.close()
    assert paths[:2] == ["items/violin", "items/decoy"]


def test_a_search_for_more_hits_than_the_candidates_gets_more_vector_candidates(
    tmp_path: Path,
) -> None:
    """`# Relevant Memory` of a large budget looks for 2 × its hits: the vectors offer enough
    to fill them after the keyword hits, not `CANDIDATES` alone."""
    embedder = DecoyEmbedder()
    index = MemoryIndex(tmp_path / "memory", tmp_path / "index", embedder=embedder)
    index.add_document("violin", FACTS["violin"], "", at=NOW)
    many = CANDIDATES + 30
    index.add_documents([Document(f"decoy-{n}", f"decoy note {n}", "") for n in range(many)])
    query = "violin lessons"
    embedder.queries.add(query)

    hits = index.search(query, scopes=[""], k=many + 1)
    few = index.search(query, scopes=[""], k=5)
    index.close()
    assert hits[0].path == "items/violin", "the keyword hit stays first"
    assert len(hits) == many + 1, "every decoy is a vector candidate"
    assert len(few) == 5


def test_what_keyword_search_misses_the_vectors_still_find(tmp_path: Path) -> None:
    index = MemoryIndex(
        tmp_path / "memory", tmp_path / "index", embedder=Model2VecEmbedder(SMALL_MODEL2VEC)
    )
    for key, fact in FACTS.items():
        index.add_document(key, fact, "")
    hits = index.search("where are we travelling on vacation", scopes=[""], k=1)
    index.close()
    assert [h.path for h in hits] == ["items/lisbon"]


# ----------------------------------------------------------------------------- the evalsets


def recall_by_category(dataset: Dataset, embedder: Embedder | None) -> dict[str, float]:
    count = lambda text: len(text) // 4  # noqa: E731
    run = run_mnemo(dataset, k=20, budget=1024, count=count, embedder=embedder)
    report = summary(run, ks=[20], budget=1024, count=count)
    categories: dict[str, dict[str, float]] = report["per_category"]  # type: ignore[assignment]
    overall: dict[str, float] = report["overall"]  # type: ignore[assignment]
    return {"overall": overall["recall@budget"]} | {
        name: figures["recall@budget"] for name, figures in categories.items()
    }


@pytest.mark.parametrize("embedder_name", ["noise", "small model"])
def test_hybrid_is_never_below_keyword_on_any_category_of_either_evalset(
    embedder_name: str,
) -> None:
    embedder: Embedder = (
        NoiseEmbedder() if embedder_name == "noise" else Model2VecEmbedder(SMALL_MODEL2VEC)
    )
    months = parse_dataset(generate(seed=13, conversations=3))
    for dataset in (months, load_dataset(EVALSET)):
        keyword = recall_by_category(dataset, None)
        hybrid = recall_by_category(dataset, embedder)
        assert hybrid.keys() == keyword.keys()
        below = {
            name: (hybrid[name], keyword[name]) for name in keyword if hybrid[name] < keyword[name]
        }
        assert not below, f"{embedder_name}: hybrid below keyword in {below}"
