"""A fake `Embedder` for the index's seam: words hashed into 16 dimensions (the same text, the
same vector; shared words, near vectors). It can fail once (`fail_next`: the endpoint down) and
hold a call whose texts mention `hold` until `release()` (a slow sync, to catch it running)."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Sequence

import numpy as np

from bot.errors import LLMUnavailable
from bot.index.embedding import Vectors, normalised

HOLD_SECONDS = 10.0  # a held call gives up after this: a test that forgets to release fails


class FakeEmbedder:
    name = "fake-hashed-words"
    dim = 16

    def __init__(self, *, hold: str | None = None) -> None:
        self.hold = hold
        self.fail_next = False
        self.calls: list[list[str]] = []  # the texts of every call that answered
        self.holding = threading.Event()  # set while a call is held
        self._released = threading.Event()

    def release(self) -> None:
        self._released.set()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.fail_next:
            self.fail_next = False
            raise LLMUnavailable("the embeddings endpoint is down")
        if self.hold and any(self.hold in text for text in texts):
            self.holding.set()
            if not self._released.wait(HOLD_SECONDS):
                raise AssertionError("a held embedding was never released")
        self.calls.append(list(texts))
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                rows[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        return normalised(rows)
