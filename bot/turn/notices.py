"""`ToldNotices`: which of the door's one-time notices each stranger heard ("write to me in
private", "this bot is private", "try again later" …), kept in `state/door_told.json`
({"version": 1, "told": {"group:4242": null, "full:4242": "2026-12-02T10:00:00+00:00"}}: the
kind and the user, and until when it holds; null: for good), a document of the workspace
(`documents`: the replicas share it, so a stranger hears each notice once from the cluster, not
once from each replica; and once across a restart).

`first(kind, user, until)` is one read-modify-write under the path's lock: true for the one
call that records the notice. A file that cannot be read counts as empty and is written anew
(it holds no one's memory: the worst is a notice told twice).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from pathlib import Path

import structlog

from bot import versioned
from bot.storage.files import ON_DISK, Documents, Locks

log = structlog.get_logger(__name__)
FORMAT_VERSION = 1


@dataclass(eq=False)
class ToldNotices:
    path: Path
    locks: Locks
    _: KW_ONLY
    documents: Documents = ON_DISK

    async def first(
        self, kind: str, user_id: int, *, now: datetime, until: datetime | None = None
    ) -> bool:
        """Whether this user is to hear this kind of notice now (recorded as heard `until`)."""
        key = f"{kind}:{user_id}"
        async with self.locks.hold(self.path):
            told = await asyncio.to_thread(self._read)
            if key in told and ((held := told[key]) is None or _after(held, now)):
                return False
            told = {k: v for k, v in told.items() if v is None or _after(v, now)}  # expired go
            told[key] = until.isoformat() if until is not None else None
            document = versioned.encode(FORMAT_VERSION, {"told": told}, indent=1, ascii_only=True)
            await asyncio.to_thread(self.documents.write, self.path, document.encode("utf-8"))
        return True

    def _read(self) -> dict[str, str | None]:
        try:
            data = self.documents.read(self.path)
            if data is None:
                return {}
            told = json.loads(data.decode("utf-8"))["told"]
            return {str(k): (None if v is None else str(v)) for k, v in told.items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("door_notices_unreadable", path=str(self.path), reason=str(exc))
            return {}


def _after(when: str, now: datetime) -> bool:
    try:
        return datetime.fromisoformat(when) > now
    except ValueError:
        return False
