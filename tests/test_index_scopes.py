"""Privacy in the index: a chat's search sees only the scopes it may see, by keyword and vector."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from bot.index import Exchange, MemoryIndex, Model2VecEmbedder
from bot.index.vectors import VectorCache
from bot.models import GLOBAL_SCOPE, MemoryScope
from bot.storage.workspace import Workspace
from tests.harness import SMALL_MODEL2VEC

MODEL = SMALL_MODEL2VEC
GROUP, OTHER, TOPIC = "telegram:-100", "telegram:-200", "telegram:-100:7"
AT = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def embedder() -> Model2VecEmbedder:
    return Model2VecEmbedder(MODEL)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def memory(root: Path) -> Workspace:
    """Every scope remembers a violin recital, in words of its own."""
    ws = Workspace(root)
    write(ws.long_term_path(GLOBAL_SCOPE), "# Family\nMia's violin recital is on Friday at six.\n")
    write(
        ws.long_term_path(MemoryScope(GROUP)), "# Group\nThe violin recital picnic needs chairs.\n"
    )
    write(ws.long_term_path(MemoryScope(OTHER)), "# Band\nOther band's violin recital rehearsal.\n")
    write(ws.working_memory_path(TOPIC), "Working on the violin recital poster.\n")
    return ws


@pytest.fixture
def index(tmp_path: Path, embedder: Model2VecEmbedder) -> Iterator[MemoryIndex]:
    ws = memory(tmp_path / "ws")
    found = MemoryIndex(ws.memory_root, ws.index_dir, embedder=embedder)
    found.sync_files()
    yield found
    found.close()


def test_a_group_finds_only_its_own_memory(index: MemoryIndex) -> None:
    hits = index.search("violin recital", scopes=[GROUP], k=10)

    assert [h.path for h in hits] == ["chats/telegram%3A-100/MEMORY.md"]
    assert {h.scope for h in hits} == {GROUP}


def test_the_owner_sees_global_memory_and_the_own_chat_but_no_group(index: MemoryIndex) -> None:
    hits = index.search("violin recital", scopes=["", TOPIC], k=10)

    assert {h.path for h in hits} == {"MEMORY.md", "working/telegram%3A-100%3A7.md"}


def test_a_chat_key_that_prefixes_another_does_not_see_it(index: MemoryIndex) -> None:
    """`telegram:-100` is a prefix of the forum topic `telegram:-100:7`: still another scope."""
    assert {h.scope for h in index.search("poster", scopes=[GROUP], k=10)} == {GROUP}
    assert [h.scope for h in index.search("poster", scopes=[TOPIC], k=10)] == [TOPIC]


def test_vector_candidates_stay_in_scope(index: MemoryIndex) -> None:
    """A paraphrase shares no word with any memory: only vectors can find it."""
    query = "musical performance with a stringed instrument"
    owner = index.search(query, scopes=[""], k=10)
    group = index.search(query, scopes=[GROUP], k=10)

    assert [h.path for h in owner] == ["MEMORY.md"]  # the vectors do find things...
    assert [h.scope for h in group] == [GROUP]  # ...but only the group's own


def test_exchanges_and_documents_stay_in_their_scope(index: MemoryIndex) -> None:
    index.add_exchange(
        Exchange("telegram:1", "t1", "my tuba lesson is at noon", "Noted.", scope="", at=AT)
    )
    index.add_document("s-1", "The tuba needs new valves.", OTHER)

    assert {h.scope for h in index.search("tuba", scopes=[GROUP], k=10)} == {GROUP}
    assert index.search("tuba", scopes=[""], k=10)[0].kind == "exchange"
    assert index.search("tuba", scopes=[OTHER], k=10)[0].path == "items/s-1"


def test_no_scopes_see_nothing(index: MemoryIndex) -> None:
    assert index.search("violin recital", scopes=[], k=10) == []


def test_the_vector_cache_scores_only_the_scopes_asked_for() -> None:
    cache = VectorCache(dim=3)
    rows = np.eye(3, dtype=np.float32)
    cache.add([1, 2, 3], ["", GROUP, OTHER], rows)

    assert cache.top(rows[2], [GROUP], k=5)[0][0] == 2, "the best match is another chat's"
    assert 3 not in [i for i, _ in cache.top(rows[2], [GROUP, ""], k=5)]
    assert cache.top(rows[2], [OTHER], k=5)[0][0] == 3


def test_the_vector_cache_follows_removals_and_replacements() -> None:
    cache = VectorCache(dim=2)
    across = np.asarray([1, 0], dtype=np.float32)
    up = np.asarray([0, 1], dtype=np.float32)
    cache.add(list(range(40)), [GROUP] * 40, np.tile(across, (40, 1)))
    cache.remove(range(0, 40, 2))
    cache.add([7], [""], np.asarray([up], dtype=np.float32))  # 7 moves to the global scope

    assert len(cache) == 20
    assert sorted(i for i, _ in cache.top(across, [GROUP], k=50)) == [
        n for n in range(1, 40, 2) if n != 7
    ]
    assert cache.top(up, [""], k=5) == [(7, 1.0)]


def test_the_vector_cache_finds_exactly_the_nearest_rows(embedder: Model2VecEmbedder) -> None:
    """The scan's top k are brute force's (float32 dot products), scores and all, over blocks
    grown by many adds and holed by removals."""
    words = [
        "violin",
        "recital",
        "picnic",
        "chairs",
        "rehearsal",
        "band",
        "friday",
        "tuba",
        "garden",
        "rain",
        "train",
    ]
    texts = [" ".join(three) for three in itertools.combinations(words, 3)]
    rows = embedder.embed(texts)
    assert len(np.unique(rows.round(5), axis=0)) == len(texts) == 165, "ties would be ambiguous"
    scopes = ["" if n % 3 else GROUP for n in range(len(texts))]
    cache = VectorCache(dim=embedder.dim)
    for start in range(0, len(texts), 15):
        end = start + 15
        cache.add(list(range(start, end)), scopes[start:end], rows[start:end])
    cache.remove(range(0, len(texts), 7))
    kept = [n for n in range(len(texts)) if n % 7 and scopes[n] == ""]

    for query in embedder.embed(["violin band", "rain in the garden", "tuba"]):
        exact = rows[kept] @ query
        best = np.argsort(-exact)[:20]
        found = cache.top(query, [""], k=20)
        assert [i for i, _ in found] == [kept[b] for b in best]
        assert np.allclose([s for _, s in found], exact[best], atol=1e-5)
