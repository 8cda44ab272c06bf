"""The seams to a recall server beside the embedded index (LightRAG, `bot.index.lightrag`).

Two narrow protocols, so each caller depends only on what it uses:

    ExchangeSink   system 55: hand it every finished exchange; it keeps only what it may
                   (LightRAG: the owner's global-scope exchanges, nothing from other chats)
    RemoteSearch   `# Relevant Memory` and `memory_search`: hits to add to the embedded
                   index's, for a caller whose `scopes` include global memory ("")

`RemoteSearch.search` is best-effort by contract: a server that is down, slow or refusing
gives `[]` (logged), never an exception, so a caller in the reply path needs no try block.
Its hits are ordinary `Hit`s with `kind="lightrag"`, a `lightrag:<source>` path (the citation,
no line range) and scores on the same Reciprocal Rank Fusion scale as a keyword-only search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bot.index.search import Hit
from bot.index.sources import Exchange


class ExchangeSink(Protocol):
    async def index_exchange(self, exchange: Exchange) -> bool:
        """Send one finished exchange; False when it was not sent (not the owner's memory).
        Raises `RagUnavailable` when the server fails: run it under `BestEffort`."""
        ...


class RemoteSearch(Protocol):
    async def search(self, query: str, *, scopes: Sequence[str], k: int) -> list[Hit]: ...
