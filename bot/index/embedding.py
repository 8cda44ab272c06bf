"""Embedders: the `Embedder` protocol, the local model2vec implementation, and the one fetch
of a model2vec model from a Hugging Face hub into the workspace.

An embedder turns texts into L2-normalised float32 rows, so a dot product is the cosine. Its
`name` is recorded in the index: a different name (another model, or none) means the stored
vectors are dropped and recomputed. `OpenAIEmbedder` (an OpenAI-compatible `/v1/embeddings`)
lives in `bot.llm.embeddings`, the only place the SDK may be imported. All calls are blocking.

`fetch_model` downloads a model's three files (`MODEL_FILES`, `<hub>/<repo>/resolve/main/…`)
once into `<models dir>/<owner>--<name>/`: into a temporary folder first, renamed into place
when all three are there, under a file lock (two processes starting at once fetch it once).
Loading is model2vec's own, from that folder, offline; `hub_model` falls back to keyword search
(one warning) when the fetch fails.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import httpx
import numpy as np
import numpy.typing as npt
import structlog
from filelock import FileLock

from bot.errors import ConfigError, ModelFetchError
from bot.storage.files import ensure_dir, fsync_path

log = structlog.get_logger(__name__)
MODEL2VEC_PATH_VAR = "BOT_RAG__MODEL2VEC_PATH"  # a local folder instead of the hub's model

MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
_CHUNK = 1 << 20

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


@runtime_checkable
class QuerySide(Protocol):
    """An embedder that embeds a search's question otherwise than what it indexes (a prefix,
    another model name: `OpenAIEmbedder`); any other embeds both alike."""

    def embed_query(self, texts: Sequence[str]) -> Vectors: ...


def query_vectors(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """`texts` embedded as questions: by the embedder's query side when it has one."""
    if isinstance(embedder, QuerySide):
        return embedder.embed_query(texts)
    return embedder.embed(texts)


def normalised(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (an all-zero row stays zero) as contiguous float32."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: Vectors = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return out


def require_model2vec() -> None:
    """A `ConfigError` saying how to install model2vec when it is not installed."""
    if importlib.util.find_spec("model2vec") is None:
        raise ConfigError(
            "BOT_RAG__EMBEDDER=model2vec needs the embedder extra: `pip install -e "
            "'.[embedder]'`, or in Docker MNEMO_EMBEDDER=1 in .env (--build-arg EMBEDDER=1)"
        )


class Model2VecEmbedder:
    """A model2vec static model loaded from a local folder; it never touches the network."""

    def __init__(self, folder: Path) -> None:
        if not (folder / "config.json").is_file():
            raise ConfigError(f"no model2vec model in {folder} (config.json is missing)")
        require_model2vec()
        os.environ["HF_HUB_OFFLINE"] = "1"  # before huggingface_hub is first imported
        from model2vec import StaticModel  # heavy: imported only when configured

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


def model_folder(models_dir: Path, repo: str) -> Path:
    """Where a hub model is cached (`minishlab/potion-retrieval-32M` →
    `<models_dir>/minishlab--potion-retrieval-32M`); a `ConfigError` for a malformed id."""
    if not _REPO.match(repo) or ".." in repo:
        raise ConfigError(f"BOT_RAG__MODEL2VEC_MODEL: {repo!r} is not a model id like owner/name")
    return models_dir / repo.replace("/", "--")


def is_cached(folder: Path) -> bool:
    return all((folder / name).is_file() for name in MODEL_FILES)


def fetch_model(repo: str, models_dir: Path, *, hub: str, timeout: float) -> Path:
    """The model's folder, downloaded from `hub` first when it is not cached yet."""
    folder = model_folder(models_dir, repo)
    if is_cached(folder):
        return folder
    require_model2vec()  # before a download it could not use
    ensure_dir(models_dir)
    with FileLock(str(models_dir / f".{folder.name}.lock")):
        if not is_cached(folder):  # another process may have fetched it meanwhile
            _download(f"{hub.rstrip('/')}/{repo}/resolve/main", folder, timeout=timeout)
    return folder


def hub_model(repo: str, models_dir: Path, *, hub: str, timeout: float) -> Embedder | None:
    """The hub model, fetched the first time; None (keyword-only, one warning that says how
    to fix it) when it cannot be fetched."""
    try:
        folder = fetch_model(repo, models_dir, hub=hub, timeout=timeout)
    except (ModelFetchError, OSError) as exc:
        log.warning(
            "embedder_unavailable_keyword_only",
            model=repo,
            reason=str(exc),
            fix=f"needs network once to fetch it into {models_dir}, or set {MODEL2VEC_PATH_VAR}",
        )
        return None
    return Model2VecEmbedder(folder)


def _download(base: str, folder: Path, *, timeout: float) -> None:
    part = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        with httpx.Client(follow_redirects=True, timeout=timeout) as client:
            for name in MODEL_FILES:
                _save(client, f"{base}/{name}", part / name)
        shutil.rmtree(folder, ignore_errors=True)  # a folder without all its files
        os.replace(part, folder)
        fsync_path(folder.parent)
    except httpx.HTTPError as exc:
        reason = (
            f"HTTP {exc.response.status_code}"
            if isinstance(exc, httpx.HTTPStatusError)
            else type(exc).__name__
        )
        raise ModelFetchError(f"{base}: {reason}") from exc
    finally:
        shutil.rmtree(part, ignore_errors=True)


def _save(client: httpx.Client, url: str, path: Path) -> None:
    with client.stream("GET", url) as response, path.open("wb") as out:
        response.raise_for_status()
        for block in response.iter_bytes(_CHUNK):
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
