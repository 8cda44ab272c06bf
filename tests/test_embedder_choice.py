"""Choosing an embedder: a hub model2vec model fetched once on first use and cached in the
workspace (a fake hub on 127.0.0.1), keyword-only with one warning when it cannot be fetched."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.errors import ConfigError
from bot.index import Embedder
from bot.index.embedding import MODEL_FILES, is_cached, model_folder
from bot.llm.embeddings import embedder_loader
from bot.settings import RagSettings
from tests.fakes.model_hub import FakeHub
from tests.harness import SMALL_MODEL2VEC

MODEL = "tests/minilm-m2v-small"


@pytest.fixture
async def hub() -> AsyncIterator[FakeHub]:
    async with FakeHub(SMALL_MODEL2VEC) as fake:
        yield fake


async def load(hub_url: str, models: Path, model: str = MODEL) -> Embedder | None:
    rag = RagSettings(embedder="model2vec", model2vec_model=model, model2vec_hub=hub_url)
    loader = embedder_loader(rag, llm_base_url="http://unused", api_key=None, models_dir=models)
    return await asyncio.to_thread(loader, 5.0)


async def test_a_hub_model_is_fetched_once_and_cached_in_the_workspace(
    hub: FakeHub, tmp_path: Path
) -> None:
    models = tmp_path / "workspace" / "models"
    embedder = await load(hub.url, models)

    assert embedder is not None
    assert embedder.name == f"model2vec:tests--minilm-m2v-small:{embedder.dim}"
    assert embedder.embed(["the violin"]).shape == (1, embedder.dim)
    folder = models / "tests--minilm-m2v-small"
    assert sorted(p.name for p in folder.iterdir()) == sorted(MODEL_FILES)
    assert len(hub.requests) == len(MODEL_FILES)

    again = await load(hub.url, models)
    assert again is not None and again.name == embedder.name
    assert len(hub.requests) == len(MODEL_FILES)  # served from the cache


async def test_without_network_recall_is_keyword_only_with_one_warning(
    hub: FakeHub, tmp_path: Path
) -> None:
    url = hub.url
    await hub.stop()
    with capture_logs() as logs:
        embedder = await load(url, tmp_path / "models")

    assert embedder is None
    [warning] = [entry for entry in logs if entry["log_level"] == "warning"]
    assert warning["event"] == "embedder_unavailable_keyword_only"
    assert warning["model"] == MODEL
    assert "BOT_RAG__MODEL2VEC_PATH" in warning["fix"]


async def test_a_fetch_cut_short_leaves_nothing_behind(hub: FakeHub, tmp_path: Path) -> None:
    hub.missing.add("tokenizer.json")
    models = tmp_path / "models"
    with capture_logs() as logs:
        assert await load(hub.url, models) is None
    assert "HTTP 404" in logs[-1]["reason"]
    assert [p.name for p in models.iterdir() if not p.name.endswith(".lock")] == []

    hub.missing.clear()  # the next start fetches it
    assert await load(hub.url, models) is not None
    assert is_cached(model_folder(models, MODEL))


@pytest.mark.parametrize("model", ["no-owner", "../../etc", "a/b/c", "owner/.."])
def test_a_malformed_model_id_is_a_config_error(tmp_path: Path, model: str) -> None:
    rag = RagSettings(embedder="model2vec", model2vec_model=model)
    with pytest.raises(ConfigError, match="BOT_RAG__MODEL2VEC_MODEL"):
        embedder_loader(rag, llm_base_url="http://unused", api_key=None, models_dir=tmp_path)
