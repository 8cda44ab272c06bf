"""`OpenAIEmbedder`: the index's `Embedder` over any OpenAI-compatible `/v1/embeddings` endpoint.

Blocking (the index calls it from a worker thread), with an explicit timeout and the SDK's own
retries. Inputs go in batches; rows come back in input order, L2-normalised. The dimension is
learnt from the first answer (one probe request if asked before any). SDK errors become
`LLMRejected` (a 4xx other than 408/409/429) or `LLMUnavailable`.
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
    ) -> None:
        import openai

        self.model = model
        self._dim: int | None = None
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._batch(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = [self._batch(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
        if not rows:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return normalised(np.concatenate(rows))

    def _batch(self, texts: Sequence[str]) -> Vectors:
        import openai

        inputs = [text if text.strip() else " " for text in texts]  # "" is refused
        try:
            response = self._client.embeddings.create(
                model=self.model, input=inputs, encoding_format="float"
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
