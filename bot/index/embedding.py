"""Embedders: the `Embedder` protocol and the local, offline model2vec implementation.

An embedder turns texts into L2-normalised float32 rows, so a dot product is the cosine. Its
`name` is recorded in the index: a different name (another model, or none) means the stored
vectors are dropped and recomputed. `OpenAIEmbedder` (an OpenAI-compatible `/v1/embeddings`)
lives in `bot.llm.embeddings`, the only place the SDK may be imported. All calls are blocking.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from bot.errors import ConfigError

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    @property
    def name(self) -> str:
        """Identifies the model and its output (recorded in the index)."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised float32 row per text."""
        ...


def normalised(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (an all-zero row stays zero) as contiguous float32."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: Vectors = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return out


class Model2VecEmbedder:
    """A model2vec static model loaded from a local folder; it never touches the network."""

    def __init__(self, folder: Path) -> None:
        if not (folder / "config.json").is_file():
            raise ConfigError(f"no model2vec model in {folder} (config.json is missing)")
        os.environ["HF_HUB_OFFLINE"] = "1"  # before huggingface_hub is first imported
        try:
            from model2vec import StaticModel  # heavy: imported only when configured
        except ImportError:
            raise ConfigError(
                "BOT_RAG__EMBEDDER=model2vec needs the embedder extra: `pip install -e "
                "'.[embedder]'`, or in Docker MNEMO_EMBEDDER=1 in .env (--build-arg EMBEDDER=1)"
            ) from None

        self._model = StaticModel.from_pretrained(folder)
        self._name = f"model2vec:{folder.resolve().name}:{self._model.dim}"

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return int(self._model.dim)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        raw = self._model.encode(list(texts), use_multiprocessing=False, batch_size=1024)
        return normalised(raw)
