"""Working memory: one session's scratchpad, `memory/working/<session-key>.md`.

Each update replaces the whole file. It is read with its age ("updated 2 hours ago") taken from
the file's mtime (a shared document's last change: `Workspace.documents`); past `stale_days` it
is ignored (not deleted) until the next update overwrites it. A file that is a link to another
is never read nor written (`bot.storage.confined`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.errors import OutOfScopeError
from bot.storage.files import Documents, Locks
from bot.storage.lines import without_controls
from bot.storage.textfile import read_shown
from bot.storage.workspace import Workspace


@dataclass(frozen=True)
class WorkingNote:
    text: str
    updated_at: datetime  # the file's mtime, in the clock's time zone
    age: str  # "updated today at 14:05"


def age_phrase(updated_at: datetime, moment: datetime) -> str:
    """How old the snapshot is, by calendar day: "updated today at 14:05", "updated yesterday
    at 09:10", "updated 3 days ago". The phrase changes once a day at most, so the prompt part
    that shows it stays the same from turn to turn (providers cache prompts by prefix)."""
    local = updated_at.astimezone(moment.tzinfo)
    days = (moment.date() - local.date()).days
    if days <= 0:
        return f"updated today at {local:%H:%M}"
    if days == 1:
        return f"updated yesterday at {local:%H:%M}"
    return f"updated {days} days ago"


class WorkingMemory:
    def __init__(
        self,
        workspace: Workspace,
        locks: Locks,
        *,
        stale_days: int,
        now: Callable[[], datetime],
    ) -> None:
        self.workspace = workspace
        self.documents = workspace.documents  # the files, or shared by the replicas
        self.locks = locks
        self.stale_after = timedelta(days=stale_days)
        self.now = now

    async def write(self, session_key: str, text: str) -> None:
        """Replace the session's snapshot with `text`."""
        path = self.workspace.working_memory_path(session_key)
        if not self.workspace.inside_scope(path):
            raise OutOfScopeError(f"{path.name} leads out of working memory")
        async with self.locks.hold(path):
            data = (without_controls(text).strip() + "\n").encode("utf-8")
            await asyncio.to_thread(self.documents.write, path, data)

    async def clear(self, session_key: str) -> None:
        """Forget the session's snapshot (for /new); no file is fine."""
        path = self.workspace.working_memory_path(session_key)
        async with self.locks.hold(path):
            await asyncio.to_thread(self.documents.delete, path)

    def read_fresh(self, session_key: str) -> WorkingNote | None:
        """The snapshot with its age, or None when it is missing, empty or stale."""
        path = self.workspace.working_memory_path(session_key)
        updated_at = _modified_at(self.documents, path)
        if updated_at is None or not self.workspace.inside_scope(path):
            return None
        moment = self.now()
        age = max(moment - updated_at, timedelta(0))
        if age > self.stale_after:
            return None
        text = read_shown(path, self.documents).strip()
        if not text:
            return None
        local = updated_at.astimezone(moment.tzinfo)
        return WorkingNote(text=text, updated_at=local, age=age_phrase(updated_at, moment))


def _modified_at(documents: Documents, path: Path) -> datetime | None:
    try:
        version = documents.version(path)
    except OSError:
        return None
    return None if version is None else datetime.fromtimestamp(version[2] / 1e9, tz=UTC)
