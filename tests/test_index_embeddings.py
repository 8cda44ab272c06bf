"""Embedders: an OpenAI-compatible endpoint over real HTTP, the local model2vec folder, and an
index that changes embedder."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from bot.errors import ConfigError, LLMRejected
from bot.index import MemoryIndex, Model2VecEmbedder
from bot.index.memory_index import INDEX_FILE
from bot.llm.embeddings import OpenAIEmbedder
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import EMBEDDING_DIMENSIONS, FakeOpenAI
from tests.harness import SMALL_MODEL2VEC

MODEL = SMALL_MODEL2VEC


def openai_embedder(fake: FakeOpenAI, api_key: str = "sk-test") -> OpenAIEmbedder:
    return OpenAIEmbedder(
        base_url=fake.base_url, api_key=api_key, model="text-embedding-3-small", max_retries=0
    )


async def test_openai_embeddings_come_back_normalised_and_in_order(
    fake_openai: FakeOpenAI,
) -> None:
    embedder = openai_embedder(fake_openai)

    both = await asyncio.to_thread(embedder.embed, ["first", "second"])
    second = await asyncio.to_thread(embedder.embed, ["second"])
    embedder.close()

    assert both.shape == (2, EMBEDDING_DIMENSIONS) and both.dtype == np.float32
    assert np.allclose(np.linalg.norm(both, axis=1), 1.0)
    assert np.allclose(both[1], second[0])
    assert not np.allclose(both[0], both[1])
    assert fake_openai.embedding_requests[0]["input"] == ["first", "second"]


async def test_an_index_searches_with_remote_embeddings(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.memory_root.mkdir(parents=True)
    (ws.memory_root / "MEMORY.md").write_text("# Pets\nThe cat is called Pixel.\n")
    embedder = openai_embedder(fake_openai)

    index = await asyncio.to_thread(MemoryIndex, ws.memory_root, ws.index_dir, embedder=embedder)
    await asyncio.to_thread(index.sync_files)
    hits = await asyncio.to_thread(index.search, "Pixel", scopes=[""], k=3)
    stats = index.stats()
    index.close()
    embedder.close()

    assert [h.citation for h in hits] == ["MEMORY.md#L1-L2"]
    assert (stats.vectors, stats.embedder) == (1, "openai:text-embedding-3-small")


async def test_a_refused_key_is_a_rejection(tmp_path: Path) -> None:
    async with FakeOpenAI(api_key="right") as fake:
        embedder = openai_embedder(fake, api_key="wrong")
        with pytest.raises(LLMRejected):
            await asyncio.to_thread(embedder.embed, ["text"])
        embedder.close()


def test_a_model_folder_without_a_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no model2vec model"):
        Model2VecEmbedder(tmp_path)


def test_the_local_model_embeds_offline() -> None:
    embedder = Model2VecEmbedder(MODEL)

    rows = embedder.embed(["violin lessons", "fiddle practice", "winter tyres", ""])

    assert rows.shape == (4, embedder.dim) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows[:3], axis=1), 1.0)
    assert rows[0] @ rows[1] > rows[0] @ rows[2]
    assert embedder.embed([]).shape == (0, embedder.dim)


def test_a_new_embedder_embeds_what_is_already_indexed(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.memory_root.mkdir(parents=True)
    (ws.memory_root / "MEMORY.md").write_text("Mia practises the violin every evening.\n")
    keyword = MemoryIndex(ws.memory_root, ws.index_dir)
    keyword.sync_files()
    keyword.add_document("s-1", "The car needs winter tyres.", "")
    keyword.close()

    hybrid = MemoryIndex(ws.memory_root, ws.index_dir, embedder=Model2VecEmbedder(MODEL))
    stats = hybrid.stats()
    hits = hybrid.search("which musical instrument", scopes=[""], k=1)
    hybrid.close()

    assert stats.vectors == 2, "the file and the document, kept and embedded"
    assert [h.path for h in hits] == ["MEMORY.md"]


def test_chunks_left_without_a_vector_are_embedded_on_open(tmp_path: Path) -> None:
    """A crash between writing chunks and embedding them (or a hand-pruned table)."""
    ws = Workspace(tmp_path / "ws")
    ws.memory_root.mkdir(parents=True)
    (ws.memory_root / "MEMORY.md").write_text("# Pets\nThe cat is Pixel.\n\n# Car\nBlue.\n")
    embedder = Model2VecEmbedder(MODEL)
    first = MemoryIndex(ws.memory_root, ws.index_dir, embedder=embedder)
    first.sync_files()
    first.close()
    with sqlite3.connect(ws.index_dir / INDEX_FILE) as db:
        db.execute("DELETE FROM vectors WHERE id = (SELECT min(id) FROM vectors)")
    db.close()

    reopened = MemoryIndex(ws.memory_root, ws.index_dir, embedder=embedder)

    assert reopened.stats().vectors == 2
    reopened.close()


async def test_the_index_and_the_question_are_embedded_each_with_its_side(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """e5's way: `passage: ` before what is indexed, `query: ` before a search's question (and
    the question under a model name of its own, for a server that chooses the side by it)."""
    ws = Workspace(tmp_path / "ws")
    ws.memory_root.mkdir(parents=True)
    (ws.memory_root / "MEMORY.md").write_text("# Pets\nThe cat is called Pixel.\n")
    embedder = OpenAIEmbedder(
        base_url=fake_openai.base_url,
        api_key="sk-test",
        model="e5-passage",
        max_retries=0,
        query_model="e5-query",
        query_prefix="query: ",
        passage_prefix="passage: ",
    )

    index = await asyncio.to_thread(MemoryIndex, ws.memory_root, ws.index_dir, embedder=embedder)
    await asyncio.to_thread(index.sync_files)
    await asyncio.to_thread(index.search, "what is the cat called?", scopes=[""], k=3)
    stats = index.stats()
    index.close()
    embedder.close()

    sent = [(r["model"], r["input"]) for r in fake_openai.embedding_requests]
    indexed = [text for model, inputs in sent if model == "e5-passage" for text in inputs]
    asked = [text for model, inputs in sent if model == "e5-query" for text in inputs]
    assert indexed and all(text.startswith("passage: ") for text in indexed)
    assert asked == ["query: what is the cat called?"]
    assert stats.embedder == "openai:e5-passage (passage:)"  # another prefix: embedded again
