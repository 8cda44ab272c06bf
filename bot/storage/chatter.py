"""`state/chatter/<chat>.json`: what a group said that did not address the bot, since the bot
last answered there, kept (bounded) for its next turn in that chat.

    {"version": 1, "said": [{"id": "telegram:update:1001", "name": "Ann", "text": "…",
                             "at": "2026-11-25T14:02:00+00:00"}]}

Bounded on every write: the last `max_messages` messages within `max_chars` characters of text
all told (the oldest go first; one longer message is cut to `max_chars`). A message is kept once
(by its id, however often a restart replays it). Read and written through the workspace's
documents (`Workspace.documents`: the file, or the replicas' shared table, so a group's message
kept by one replica is in the next turn another one runs); every change is a read-modify-write
under the document's lock (`Locks`: shared by the replicas too). A document that cannot be
parsed is set aside as `<name>.unreadable` (a warning) and the chat starts again with none.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Collection
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from pathlib import Path

import structlog

from bot import versioned
from bot.models import Said
from bot.settings import TelegramSettings
from bot.storage.files import Documents, Locks
from bot.storage.workspace import Workspace
from bot.versioned import Fields, objects

log = structlog.get_logger(__name__)
VERSION = 1


@dataclass(eq=False)
class ChatterStore:
    workspace: Workspace
    locks: Locks
    _: KW_ONLY
    max_messages: int
    max_chars: int

    @classmethod
    def from_settings(
        cls, telegram: TelegramSettings, workspace: Workspace, locks: Locks
    ) -> ChatterStore | None:
        """None when no chatter is kept (`telegram.group_chatter_messages` 0)."""
        if telegram.group_chatter_messages == 0:
            return None
        return cls(
            workspace,
            locks,
            max_messages=telegram.group_chatter_messages,
            max_chars=telegram.group_chatter_chars,
        )

    async def keep(self, key: str, said: Said) -> None:
        """Add one message to the chat's chatter (dropping the oldest past the bounds)."""
        bounds = self.max_messages, self.max_chars
        await self._change(key, lambda kept: _bounded(kept, said, *bounds))

    async def pending(self, key: str) -> tuple[Said, ...]:
        """The chat's chatter, oldest first."""
        path = self.workspace.chatter_path(key)
        return tuple(await asyncio.to_thread(_load, self.workspace.documents, path))

    async def drop(self, key: str, ids: Collection[str]) -> None:
        """Forget the messages a turn showed the model (any kept since stay)."""
        if ids:
            await self._change(key, lambda kept: [s for s in kept if s.id not in ids])

    async def forget(self, key: str, needle: str) -> list[str]:
        """Drop the messages holding `needle` (any case, in the text or the name); their
        texts. /undo does not bring them back: chatter only waits for the bot's next turn."""
        lowered, gone = needle.casefold(), []

        def without(kept: list[Said]) -> list[Said]:
            for said in kept:
                if lowered in said.text.casefold() or lowered in said.name.casefold():
                    gone.append(said)
            return [said for said in kept if said not in gone]

        await self._change(key, without)
        return [said.text for said in gone]

    async def _change(self, key: str, change: Callable[[list[Said]], list[Said]]) -> None:
        path = self.workspace.chatter_path(key)
        async with self.locks.hold(path):
            await asyncio.to_thread(_rewrite, self.workspace.documents, path, change)


def _bounded(kept: list[Said], said: Said, max_messages: int, max_chars: int) -> list[Said]:
    if any(s.id == said.id for s in kept) or max_messages <= 0:
        return kept
    said = Said(said.id, said.name, said.text[:max_chars], said.at)
    kept = [*kept, said][-max_messages:]
    while len(kept) > 1 and sum(len(s.text) for s in kept) > max_chars:
        kept.pop(0)
    return kept


def _rewrite(documents: Documents, path: Path, change: Callable[[list[Said]], list[Said]]) -> None:
    kept = _load(documents, path)
    changed = change(kept)
    if changed == kept:
        return
    if not changed:
        documents.delete(path)
        return
    text = versioned.encode(VERSION, {"said": [_encode(s) for s in changed]})
    documents.write(path, text.encode("utf-8"))


def _load(documents: Documents, path: Path) -> list[Said]:
    try:
        data = documents.read(path)
        if data is None:
            return []
        document = versioned.mapping(json.loads(data.decode("utf-8")))
        return [_decode(item) for item in objects(document["said"], "said")]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        aside = path.with_name(path.name + ".unreadable")
        documents.delete(aside)  # the one set aside before: a move needs its target free
        with contextlib.suppress(FileNotFoundError):  # set aside by another meanwhile
            documents.move(path, aside)
        log.warning("chatter_unreadable", path=str(aside), reason=str(exc)[:200])
        return []


def _encode(said: Said) -> dict[str, str]:
    return {"id": said.id, "name": said.name, "text": said.text, "at": said.at.isoformat()}


def _decode(item: Fields) -> Said:
    said, name, text, at = (item[f] for f in ("id", "name", "text", "at"))
    if not (isinstance(said, str) and isinstance(name, str) and isinstance(text, str)):
        raise TypeError("a field is not text")
    if not isinstance(at, str):
        raise TypeError("at is not text")
    return Said(said, name, text, datetime.fromisoformat(at))
