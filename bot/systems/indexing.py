"""System 55, RAG indexing: indexes the finished exchange (issue 5; a no-op now)."""

from __future__ import annotations

from bot.pipeline import TurnContext


class RagIndexing:
    order = 55
    name = "rag-indexing"

    async def process(self, ctx: TurnContext) -> None:
        return None
