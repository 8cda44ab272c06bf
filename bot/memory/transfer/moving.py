"""A workspace's memory as documents, and documents as a workspace's memory.

Every plain file under `memory/` is a document (a link is followed: a MEMORY.md linked into a
synced folder exports its text), except the writers' own temporary files. An import writes each
document atomically; a memory that is not empty is refused unless forced, and a forced import
first moves the old memory aside whole (`memory.before-import-<time>/` beside it), so nothing
is lost. The bot should be stopped while it imports.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from bot.memory.transfer.bundle import BundleError, Document, safe_path
from bot.storage.files import atomic_write_bytes, ensure_dir
from bot.storage.workspace import Workspace

ASIDE = "memory.before-import-{stamp}"


def documents_of(workspace: Workspace) -> list[Document]:
    """The memory's documents, by path (blocking)."""
    root = workspace.memory_root
    if not root.is_dir():
        return []
    found = [p for p in root.rglob("*") if p.is_file() and not _temporary(p)]
    return sorted(
        (Document(p.relative_to(root).as_posix(), p.read_bytes()) for p in found),
        key=lambda d: d.path,
    )


def memory_is_empty(workspace: Workspace) -> bool:
    root = workspace.memory_root
    return not root.is_dir() or not any(p.is_file() and not _temporary(p) for p in root.rglob("*"))


def import_documents(
    workspace: Workspace, documents: list[Document], *, force: bool, now: datetime
) -> Path | None:
    """Write `documents` as the workspace's memory: where the old memory went (force), or None
    when there was none. `BundleError` when it is not empty and `force` is not given."""
    aside = None
    if not memory_is_empty(workspace):
        if not force:
            raise BundleError(
                f"{workspace.memory_root} is not empty; import into an empty workspace, or "
                "give --force to move the current memory aside first"
            )
        aside = workspace.root / ASIDE.format(stamp=now.strftime("%Y%m%d-%H%M%S"))
        workspace.memory_root.rename(aside)
    ensure_dir(workspace.memory_root)
    for document in documents:
        atomic_write_bytes(workspace.memory_root / safe_path(document.path), document.data)
    return aside


def _temporary(path: Path) -> bool:
    """A writer's temporary file (`bot.storage.files`: `.<name>.<random>.tmp`)."""
    return path.name.startswith(".") and path.name.endswith(".tmp")
