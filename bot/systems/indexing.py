"""System 55, RAG indexing: the embedded search index catches up with the files the turn wrote.

It asks the index service (`IndexService.request`) to sync, after the turn and never delaying
the reply, the files system 50 wrote (`ctx.written`: the session file, a part cut from it,
today's note, the items' files) and the few a turn may change otherwise or a person most
likely edits by hand (`watched`: a stat each when unchanged). A note or items file that only
grew is indexed as an append. Any other hand edit is found by the service's catch-up walk.
The index is derived: these are the same syncs a rebuild runs.

With `rag.backend = "lightrag"` the exchange also goes to the LightRAG server (`remote`), which
keeps only the owner's global-scope exchanges (`bot.index.lightrag`: it has no per-chat
scoping). The app wraps this system in `BestEffort`: a failing or hanging server costs at most
its bounded timeout, never the reply.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from bot.index.remote import ExchangeSink
from bot.index.service import IndexService
from bot.index.sources import Exchange
from bot.models import MemoryScope, scope_key
from bot.pipeline import TurnContext
from bot.storage.workspace import Workspace


@dataclass(eq=False)
class RagIndexing:
    order = 55
    name = "rag-indexing"

    workspace: Workspace
    _: KW_ONLY
    index: IndexService | None = None
    remote: ExchangeSink | None = None

    async def process(self, ctx: TurnContext) -> None:
        try:
            if self.index is not None:
                self.index.request([*ctx.written, *watched(self.workspace, ctx)])
        finally:  # the server gets the exchange even when the local index failed
            exchange = exchange_of(ctx)
            if exchange is not None and self.remote is not None:
                await self.remote.index_exchange(exchange)


def watched(workspace: Workspace, ctx: TurnContext) -> list[Path]:
    """Files a turn may change besides those system 50 reports, which a person also edits by
    hand most: MEMORY.md, HISTORY.md and the semantic items of the turn's scope and of its
    chat's own (memory tags, compaction), and the session's working memory."""
    key = ctx.inbound.session_key
    scopes = dict.fromkeys([ctx.scope, MemoryScope(chat_key=key)])
    files = (workspace.long_term_path, workspace.history_path, workspace.semantic_items_path)
    return [
        *(path(scope) for scope in scopes for path in files),
        workspace.working_memory_path(key),
    ]


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
