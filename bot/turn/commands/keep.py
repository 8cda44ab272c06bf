"""`/keep`: an owner keeps quoted material as a fact (`MemoryWriter.keep_quoted`, the one
promotion of a quote; a receipt's button calls the same). `/keep` alone lists the quotes
waiting in this chat's memory, `/keep ID` keeps one."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from bot.memory.notes.quoted import Quote
from bot.memory.provenance import brief
from bot.models import Inbound, MemoryScope
from bot.turn.access import AccessPolicy
from bot.turn.commands.handler import Progress

OWNERS_ONLY = "Only an owner can keep quoted material as memory."
NOTHING = "Nothing quoted is waiting here."
NOT_FOUND = "No quote {id} here. /keep lists the ones waiting."
KEPT = "Kept as memory: {text}\n(from {origin})"
LISTED = "Quoted, not kept (/keep ID makes one a fact):"
SHOWN = 10


class QuoteKeeper(Protocol):
    def pending_quotes(self, scope: MemoryScope) -> list[Quote]: ...

    async def keep_quoted(self, scope: MemoryScope, quote_id: str) -> Quote | None: ...


@dataclass(eq=False)
class KeepQuoted:
    """The `/keep` handler (`bot.turn.commands.handler.Handler`)."""

    names = ("keep",)
    slow = False

    memory: QuoteKeeper
    access: AccessPolicy

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        if not self.access.is_owner(inbound.user_id):
            return OWNERS_ONLY
        return await keep(self.memory, inbound, args, scope=self.access.scope_for(inbound))


async def keep(memory: QuoteKeeper, inbound: Inbound, args: str, *, scope: MemoryScope) -> str:
    """The answer to `/keep [ID]` in a chat whose memory is `scope` (and its own)."""
    scopes = list(dict.fromkeys([scope, MemoryScope(chat_key=inbound.session_key)]))
    wanted = args.strip().split()[0] if args.strip() else ""
    if not wanted:
        found = [q for s in scopes for q in await asyncio.to_thread(memory.pending_quotes, s)]
        if not found:
            return NOTHING
        lines = [f"{q.id}: “{q.text}” ({brief(q.origin)})" for q in found[-SHOWN:]]
        return "\n".join([LISTED, *lines])
    for where in scopes:
        kept = await memory.keep_quoted(where, wanted)
        if kept is not None:
            return KEPT.format(text=kept.text, origin=brief(kept.origin))
    return NOT_FOUND.format(id=wanted)
