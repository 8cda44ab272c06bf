"""Which of the workspace's documents the replicas share, and `SplitDocuments`, the
`Documents` a replica's workspace has: those in the database (`PgDocuments`), every other one
in the replica's own folder, as before.

Shared today: the sessions and their archive (`sessions/…`), working memory
(`memory/working/`), and in each scope's memory folder (`memory/`, `memory/chats/<chat>/`)
MEMORY.md with its provenance and quoted material, the daily notes and their archive
(`archive/`), and HISTORY.
Also shared: each scope's items (`items/…`, `bot.memory.items`), reminders
(`reminders.jsonl`) and the files messages came with (`files/`: a photo, a voice note, a PDF,
and a document's text beside it, `files/*.md`; `bot.media`), so a turn answered again on
another replica finds them kept, and nothing a user sent lives on one replica's disk. A path
moves to the shared side when its store reads and writes through `Workspace.documents` alone.

Shared from `state/` too: the groups' chatter (`state/chatter/`), the undo of /forget
(`state/undo/`), the durable consolidation jobs (`state/consolidation/`), the usage ledger
(`state/usage.json`), the memory receipts (`receipts.json`), the people's time zones
(`timezones.json`), the door's one-time notices each stranger heard (`door_told.json`) and
the scheduled tasks' tokens of the day (`task_tokens.json`); the rest of it (the inbox, locks,
the channel's offset) stays the replica's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from bot.memory.provenance import SIDE_NAME
from bot.models import MemoryScope
from bot.storage.files import Documents, Signature
from bot.storage.workspace import QUOTED_NAME, Workspace

SHARED_NAMES = re.compile(
    rf"^(MEMORY\.md|{re.escape(SIDE_NAME)}|{re.escape(QUOTED_NAME)}|\d{{4}}-\d{{2}}-\d{{2}}\.md|"
    r"HISTORY(-\d{4}-\d{2})?\.md)$"
)


@dataclass(eq=False)
class SplitDocuments:
    shared: Documents
    local: Documents
    root: Path

    def is_shared(self, path: Path) -> bool:
        parts = _parts_under(path, self.root)
        if parts is None or not parts:
            return False
        if parts[0] == "sessions":
            return True
        if parts[0] == "state":
            return _is_shared_state(parts[1:])
        if parts[0] != "memory":
            return False
        folder = parts[1:-1]
        if _is_scope_store(folder, parts[-1]):
            return True
        if folder == ("working",):
            return parts[-1].endswith(".md")
        if folder and folder[-1] == "archive":  # a scope's archived notes
            return _is_scope(folder[:-1]) and parts[-1].endswith(".md")
        return _is_scope(folder) and SHARED_NAMES.match(parts[-1]) is not None

    def _side(self, path: Path) -> Documents:
        return self.shared if self.is_shared(path) else self.local

    def version(self, path: Path) -> Signature | None:
        return self._side(path).version(path)

    def read(self, path: Path) -> bytes | None:
        return self._side(path).read(path)

    def open(self, path: Path) -> BinaryIO:
        return self._side(path).open(path)

    def write(self, path: Path, data: bytes) -> None:
        self._side(path).write(path, data)

    def write_if(self, path: Path, data: bytes, expected: Signature | None) -> bool:
        return self._side(path).write_if(path, data, expected)

    def append(self, path: Path, data: bytes, *, durable: bool = True) -> None:
        self._side(path).append(path, data, durable=durable)

    def listing(self, folder: Path, pattern: str) -> list[Path]:
        return self._own(self.shared.listing(folder, pattern), self.local.listing(folder, pattern))

    def walk(self, folder: Path) -> list[Path]:
        return self._own(self.shared.walk(folder), self.local.walk(folder))

    def _own(self, shared: list[Path], local: list[Path]) -> list[Path]:
        """Each side's documents it owns (a file left on disk where the database owns the
        path, from before the replicas, is not one)."""
        theirs = [path for path in local if not self.is_shared(path)]
        return sorted([path for path in shared if self.is_shared(path)] + theirs)

    def move(self, source: Path, target: Path) -> None:
        side = self._side(source)
        if side is self._side(target):
            side.move(source, target)
            return
        data = side.read(source)
        if data is None:
            raise FileNotFoundError(str(source))
        self._side(target).write(target, data)
        side.delete(source)

    def delete(self, path: Path) -> None:
        self._side(path).delete(path)


def _parts_under(path: Path, root: Path) -> tuple[str, ...] | None:
    for mine, base in ((path, root), (path.absolute(), root.absolute())):
        if mine.is_relative_to(base):
            return mine.relative_to(base).parts
    return None


def _is_scope_store(folder: tuple[str, ...], name: str) -> bool:
    """Whether `folder/name` (under `memory/`) is a scope's items (at any depth below its
    `items/`, the folders too: their listings are the shared side's), its reminders, or a file
    a message came with (or its text)."""
    within = folder[2:] if folder[:1] == ("chats",) and len(folder) >= 2 else folder
    if within[:1] == ("items",) or within == ("files",):
        return True
    return not within and name == REMINDERS_NAME


def _is_scope(folder: tuple[str, ...]) -> bool:
    """Whether `folder` (under `memory/`) is a scope's own: the global one, or a chat's."""
    return not folder or (len(folder) == 2 and folder[0] == "chats")


_LAYOUT = Workspace(Path("/"))  # its paths alone: the shared ones named as the workspace names them
REMINDERS_NAME = _LAYOUT.reminders_path(MemoryScope(chat_key=None)).name
SHARED_STATE = frozenset(  # folders under `state/` the replicas share
    path.relative_to(_LAYOUT.state_dir).parts[0]
    for path in (_LAYOUT.chatter_path("any"), _LAYOUT.undo_dir, _LAYOUT.consolidation_dir)
)
SHARED_STATE_FILES = frozenset(
    path.relative_to(_LAYOUT.state_dir).parts
    for path in (
        _LAYOUT.usage_path,
        _LAYOUT.receipts_path,
        _LAYOUT.timezones_path,
        _LAYOUT.task_tokens_path,
        _LAYOUT.door_told_path,
    )
)


def _is_shared_state(parts: tuple[str, ...]) -> bool:
    """Whether `state/<parts>` is shared: a document in one of `SHARED_STATE`, or one of
    `SHARED_STATE_FILES`."""
    return parts in SHARED_STATE_FILES or (len(parts) > 1 and parts[0] in SHARED_STATE)
