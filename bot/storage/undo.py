"""Undo data: what a /forget rewrote, kept under `state/undo/` for a short while, then deleted.

One folder per chat (`state/undo/<encoded chat key>/`) holds the last forget only: a manifest
(versioned JSON: when, and for each file rewritten its path (relative to the workspace), kind,
the digest of what forget wrote) and each file's original bytes beside it. Past `keep` it is
expired: `load` finds nothing and `purge` deletes it — from then on the removed text is gone
from disk. As a service it purges at start and then every minute. They are the workspace's
documents (`Workspace.documents`): files (folders 0700, files 0600, every write atomic), or with
replicas rows every replica shares, so /undo on one undoes a /forget made on another, and the
one purge in the cluster sees them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import cast

import structlog

from bot import versioned
from bot.background import OwnedTask, periodically
from bot.storage.files import ON_DISK, Documents
from bot.storage.workspace import Workspace, encode_key
from bot.versioned import Fields

log = structlog.get_logger(__name__)
VERSION = 1
MANIFEST = "manifest.json"
PURGE_EVERY = 60.0  # seconds


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Kept:
    """One file a forget rewrote."""

    path: Path
    kind: str  # "lines" (markdown, JSONL) or "messages" (a session or job document)
    original: bytes
    written: str  # digest of what forget wrote


@dataclass(frozen=True)
class Undo:
    at: datetime
    needle: str
    files: tuple[Kept, ...]


class UndoStore:
    def __init__(
        self,
        folder: Path,
        *,
        keep: timedelta,
        now: Callable[[], datetime],
        documents: Documents = ON_DISK,  # the workspace's (`Workspace.documents`)
        root: Path | None = None,  # the workspace's: paths under it are kept relative to it
    ) -> None:
        self.folder = folder
        self.root = root
        self.keep = keep
        self.now = now
        self.documents = documents
        self._task = OwnedTask("undo-purge")

    @classmethod
    def in_workspace(
        cls, workspace: Workspace, *, minutes: int, now: Callable[[], datetime]
    ) -> UndoStore:
        """The workspace's, each undo kept `minutes` (`memory.undo_minutes`)."""
        return cls(
            workspace.undo_dir,
            keep=timedelta(minutes=minutes),
            now=now,
            documents=workspace.documents,
            root=workspace.root,
        )

    # ------------------------------------------------------------------ writes (blocking)

    def begin(self, chat: str, needle: str) -> None:
        """Start a new undo for `chat`, replacing the one before."""
        folder = self._folder(chat)
        self._remove(folder)
        self._save(folder, Manifest(at=self.now().isoformat(), needle=needle, files=()))

    def keep_file(
        self, chat: str, path: Path, *, kind: str, original: bytes, written: bytes
    ) -> None:
        """Keep `path`'s original bytes before forget writes `written` over them."""
        folder = self._folder(chat)
        manifest = self._read(folder)
        if manifest is None:
            return
        blob = f"{len(manifest.files)}.orig"
        self.documents.write(folder / blob, original)
        entry = Entry(path=self._named(path), kind=kind, blob=blob, written=digest(written))
        self._save(folder, replace(manifest, files=(*manifest.files, entry)))

    def drop(self, chat: str) -> None:
        self._remove(self._folder(chat))

    def purge(self) -> int:
        """Delete every expired undo; how many."""
        kept = self.documents.walk(self.folder)
        folders = {self.folder / p.relative_to(self.folder).parts[0] for p in kept}
        expired = [folder for folder in sorted(folders - set(kept)) if self._expired(folder)]
        for folder in expired:
            self._remove(folder)
        return len(expired)

    # ------------------------------------------------------------------ reads (blocking)

    def load(self, chat: str) -> Undo | None:
        """The chat's undo, or None when there is none or it expired (then it is deleted)."""
        folder = self._folder(chat)
        manifest = self._read(folder)
        if manifest is None:
            return None
        at = datetime.fromisoformat(manifest.at)
        if self.now() - at > self.keep:
            self.drop(chat)
            return None
        files = tuple(
            Kept(self._path(e.path), e.kind, self._blob(folder / e.blob), e.written)
            for e in manifest.files
        )
        return Undo(at=at, needle=manifest.needle, files=files)

    def expired(self, chat: str) -> bool:
        """True when the chat had an undo that has expired (it is deleted now)."""
        folder = self._folder(chat)
        if not self.documents.walk(folder) or not self._expired(folder):
            return False
        self.drop(chat)
        return True

    # ------------------------------------------------------------------ the service

    async def start(self) -> None:
        await asyncio.to_thread(self.purge)
        self._task.start(periodically(PURGE_EVERY, self._purge_logged))

    async def stop(self) -> None:
        await self._task.stop()

    async def _purge_logged(self) -> None:
        try:
            await asyncio.to_thread(self.purge)
        except OSError:  # the background boundary: tried again next minute
            log.warning("undo_purge_failed", exc_info=True)

    # ------------------------------------------------------------------ files

    def _folder(self, chat: str) -> Path:
        return self.folder / encode_key(chat)

    def _named(self, path: Path) -> str:
        """`path` as the manifest keeps it: relative to the workspace when under it, so another
        replica, its workspace folder elsewhere, finds the same document."""
        if self.root is not None and path.is_relative_to(self.root):
            return path.relative_to(self.root).as_posix()
        return str(path)

    def _path(self, named: str) -> Path:
        """The path a manifest names (one kept absolute is taken as it is)."""
        return Path(named) if self.root is None else self.root / named

    def _blob(self, path: Path) -> bytes:
        data = self.documents.read(path)
        if data is None:
            raise FileNotFoundError(str(path))
        return data

    def _remove(self, folder: Path) -> None:
        """Delete the undo in `folder`, each document of it (and, on disk, the folder left)."""
        for path in self.documents.walk(folder):
            self.documents.delete(path)
        with contextlib.suppress(OSError):  # not empty (a writer's temporary file), or none
            folder.rmdir()

    def _expired(self, folder: Path) -> bool:
        manifest = self._read(folder)
        if manifest is None:
            return True
        return self.now() - datetime.fromisoformat(manifest.at) > self.keep

    def _read(self, folder: Path) -> Manifest | None:
        try:
            data = self.documents.read(folder / MANIFEST)
            document = versioned.decode(data, VERSION) if data is not None else None
        except (OSError, ValueError):
            return None
        if document is None:
            return None
        try:
            files = cast(list[Fields], document.get("files", []))
            return Manifest(
                at=str(document["at"]),
                needle=str(document["needle"]),
                files=tuple(Entry(**{k: str(e[k]) for k in ENTRY}) for e in files),
            )
        except (KeyError, TypeError, AttributeError):
            return None  # damaged: as if there were none

    def _save(self, folder: Path, manifest: Manifest) -> None:
        text = versioned.encode(VERSION, asdict(manifest), ascii_only=True)
        self.documents.write(folder / MANIFEST, text.encode("utf-8"))


ENTRY = ("path", "kind", "blob", "written")


@dataclass(frozen=True)
class Entry:
    """A file an undo keeps: where it was, its kind, its original's blob, what forget wrote."""

    path: str  # as `_named` keeps it
    kind: str
    blob: str
    written: str  # the digest of the bytes forget wrote


@dataclass(frozen=True)
class Manifest:
    at: str  # ISO time the undo began
    needle: str
    files: tuple[Entry, ...]
