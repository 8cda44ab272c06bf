"""`python -m bot memory edit FILE`: one memory document in the person's editor, written back
only over the version it was read at.

FILE is the document's path under `memory/`, as an export names it (`MEMORY.md`,
`chats/telegram%3A-100123/MEMORY.md`, `2026-11-27.md`). Its bytes go to a private temporary
file, `$VISUAL` or `$EDITOR` (else `vi`) opens it, and what the editor saved is written back
with `Documents.write_if`: when the bot (or another person) changed the document meanwhile,
nothing is written, and the edited text is kept in the temporary file, named, to merge by hand.
It serves both modes; it is how a person edits the memory the replicas share (in the embedded
mode the files can be edited as they are).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from bot.app.store import stored_workspace
from bot.settings import Settings
from bot.storage.files import FILE_MODE
from bot.storage.workspace import Workspace

Print = Callable[[str], None]
FALLBACK_EDITOR = "vi"


class EditError(Exception):
    """Why the document was not written; the message says what to do."""


def run(settings: Settings, name: str, out: Print) -> int:
    with stored_workspace(settings) as workspace:
        try:
            out(edit(workspace, name))
        except EditError as exc:
            out(f"error: {exc}")
            return 1
    return 0


def edit(workspace: Workspace, name: str) -> str:
    """Edit the document `name` (under `memory/`): what happened, for the person."""
    path = workspace.memory_root / _relative(name)
    documents = workspace.documents
    version = documents.version(path)  # before the read: a change in between is refused
    before = documents.read(path) or b""
    draft = _draft(path.name, before)
    _open_editor(draft)
    after = draft.read_bytes()
    if after == before:
        draft.unlink()
        return f"{name}: no change"
    if not documents.write_if(path, after, version):
        raise EditError(
            f"{name} was changed while you edited it (by the bot or another person), so your "
            f"text was not written over it. Your text is kept in {draft}: run "
            f"`memory edit {name}` again and bring your changes over."
        )
    draft.unlink()
    return f"{name}: saved ({len(after):,} bytes)"


def _relative(name: str) -> PurePosixPath:
    """`name` as a path inside `memory/`; `EditError` for one that leads out of it."""
    path = PurePosixPath(name.replace(os.sep, "/"))
    if path.is_absolute() or not path.parts or ".." in path.parts:
        raise EditError(f"{name!r} is not a path under memory/ (like MEMORY.md)")
    return path


def _draft(name: str, data: bytes) -> Path:
    """A private temporary file holding `data`, named like the document (the editor's mode)."""
    fd, draft = tempfile.mkstemp(prefix="mnemo-edit-", suffix=f"-{name}")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(draft, FILE_MODE)
    return Path(draft)


def _open_editor(draft: Path) -> None:
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR") or FALLBACK_EDITOR
    try:
        done = subprocess.run([*shlex.split(command), str(draft)], check=False)
    except OSError as exc:
        draft.unlink()
        raise EditError(f"could not start the editor {command!r} ({exc}): set $EDITOR") from None
    if done.returncode != 0:
        raise EditError(
            f"the editor exited with {done.returncode}; nothing was written (your text, if "
            f"any, is in {draft})"
        )
