"""System 19, files first: before memory is read for a turn, the items made of MEMORY.md lines
follow the file as it is now (a line deleted or changed by hand or by consolidation retires or
retexts its item, `MemoryWriter.follow_files`), for the turn's scope and its chat's own."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from bot.models import MemoryScope
from bot.pipeline import TurnContext


class Follower(Protocol):
    async def follow_files(self, scopes: Iterable[MemoryScope]) -> int: ...


@dataclass(eq=False)
class FilesFirst:
    order = 19
    name = "files-first"

    memory: Follower

    async def process(self, ctx: TurnContext) -> None:
        chat = MemoryScope(chat_key=ctx.inbound.session_key)
        await self.memory.follow_files([ctx.scope, chat])
