"""System 55, RAG indexing: the embedded search index catches up with the files the turn wrote.

One delta sync in a worker thread (`MemoryIndex.sync_files`): the session file system 50 saved
(the exchange, cited `sessions/<key>#<turn>`), today's note line, the items' JSONL and any hand
edit since the last turn. The index is derived: this is the same sync a rebuild runs.

With `rag.backend = "lightrag"` the exchange also goes to the LightRAG server (`remote`), which
keeps only the owner's global-scope exchanges (`bot.index.lightrag`: it has no per-chat
scoping). The app wraps this system in `BestEffort`: a failing or hanging server costs at most
its bounded timeout, never the reply.
"""

from __future__ import annotations

import asyncio

from bot.index.remote import ExchangeSink
from bot.index.service import IndexService
from bot.index.sources import Exchange, scope_key
from bot.pipeline import TurnContext


class RagIndexing:
    order = 55
    name = "rag-indexing"

    def __init__(
        self,
        *,
        index: IndexService | None = None,
        remote: ExchangeSink | None = None,
    ) -> None:
        self.index = index
        self.remote = remote

    async def process(self, ctx: TurnContext) -> None:
        current = self.index.current if self.index else None
        try:
            if current is not None:
                await asyncio.to_thread(current.sync_files)
        finally:  # the server gets the exchange even when the local index failed
            exchange = exchange_of(ctx)
            if exchange is not None and self.remote is not None:
                await self.remote.index_exchange(exchange)


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
