"""A workspace's memory as documents, and documents as a workspace's memory.

Every document under `memory/` (`Workspace.documents`: every plain file, a link followed so a
MEMORY.md linked into a synced folder exports its text, no writer's temporary file; or every
row the replicas share) is exported. An import writes each document atomically; a memory that is
not empty is refused unless forced, and a forced import first moves the old memory aside whole
(`memory.before-import-<time>/` beside it), so nothing is lost. The bot should be stopped while
it imports.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from bot.memory.transfer.bundle import BundleError, Document, safe_path
from bot.storage.files import FileDocuments, ensure_dir
from bot.storage.workspace import Workspace

ASIDE = "memory.before-import-{stamp}"


def documents_of(workspace: Workspace) -> list[Document]:
    """The memory's documents, by path (blocking)."""
    root, documents = workspace.memory_root, workspace.documents
    found = ((p, documents.read(p)) for p in documents.walk(root))
    return sorted(
        (Document(p.relative_to(root).as_posix(), data) for p, data in found if data is not None),
        key=lambda d: d.path,
    )


def memory_is_empty(workspace: Workspace) -> bool:
    return not workspace.documents.walk(workspace.memory_root)


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
        _set_aside(workspace, aside)
    ensure_dir(workspace.memory_root)
    for document in documents:
        path = workspace.memory_root / safe_path(document.path)
        workspace.documents.write(path, document.data)
    return aside


def _set_aside(workspace: Workspace, aside: Path) -> None:
    """The memory moved to `aside`: the folder whole, or each shared document."""
    root, documents = workspace.memory_root, workspace.documents
    if isinstance(documents, FileDocuments):
        root.rename(aside)
        return
    for path in documents.walk(root):
        documents.move(path, aside / path.relative_to(root))
