"""System 55, RAG indexing: the finished turn into the embedded search index.

In one worker thread: the exchange (`Exchange`, cited `sessions/<key>#<turn>`), then a delta
sync of the memory files (today's note line from system 50 and any hand edit since the last
turn), then the structured items the turn wrote (systems 17, 40, 50: `ctx.memory_items`).

With `rag.backend = "lightrag"` the exchange also goes to the LightRAG server (`remote`), which
keeps only the owner's global-scope exchanges (`bot.index.lightrag`: it has no per-chat
scoping). The app wraps this system in `BestEffort`: a failing or hanging server costs at most
its bounded timeout, never the reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.index.memory_index import MemoryIndex
from bot.index.remote import ExchangeSink
from bot.index.service import IndexService
from bot.index.sources import Exchange, scope_key
from bot.memory.items.indexing import ItemIndexer
from bot.models import MemoryItem
from bot.pipeline import TurnContext


class RagIndexing:
    order = 55
    name = "rag-indexing"

    def __init__(
        self,
        *,
        index: IndexService | None = None,
        items: ItemIndexer | None = None,
        remote: ExchangeSink | None = None,
    ) -> None:
        self.index = index
        self.items = items
        self.remote = remote

    async def process(self, ctx: TurnContext) -> None:
        exchange = exchange_of(ctx)
        index = self.index.current if self.index else None
        try:
            if index is not None:
                await asyncio.to_thread(self._index, index, exchange, tuple(ctx.memory_items))
        finally:  # the server gets the exchange even when the local index failed
            if exchange is not None and self.remote is not None:
                await self.remote.index_exchange(exchange)

    def _index(
        self, index: MemoryIndex, exchange: Exchange | None, items: Sequence[MemoryItem]
    ) -> None:
        if exchange is not None:
            index.add_exchange(exchange)
        index.sync_files()
        if items and self.items is not None:
            self.items.write(index, items)


def exchange_of(ctx: TurnContext) -> Exchange | None:
    """The turn's finished exchange; None when there was no reply."""
    if ctx.reply is None:
        return None
    return Exchange(
        session_key=ctx.inbound.session_key,
        turn_id=ctx.turn_id,
        user=ctx.user_message.content or "",
        assistant=ctx.reply,
        scope=scope_key(ctx.scope),
        at=ctx.inbound.received_at,
    )
