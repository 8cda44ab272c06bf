"""Where a memory file may lead: the one owner of the path rule that keeps scopes closed on disk
(the privacy rule itself is `bot.memory.scopes`'s).

A memory file belongs to the scope of the folder it lies in (`memory/chats/<key>/…` that chat's,
`memory/working/<key>.md` that session's, anything else in `memory/` the owner's global scope).
Symlinks are followed to see where it really leads:

- a chat's file (or folder) must lead inside that chat's own folder;
- a working memory file must be itself, not a link to another file;
- a global file may lead anywhere (MEMORY.md linked into a synced folder) except into another
  scope's folder (`chats/`, `working/`) or the workspace's other files (sessions, state, index);
- what it leads to must be a regular file or a folder (never a FIFO or a device), or not exist
  yet (it is created where the link points).

A file that breaks the rule is never read, written, indexed, archived or forgotten for any
scope; `inside_scope` logs one warning naming its path (never its content). The check is made
when the file is used, so a link changed later is judged again.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

CHATS = "chats"
WORKING = "working"


def inside_scope(path: Path, memory_root: Path) -> bool:
    """Whether the memory file at `path` may be used for its scope; a warning when not."""
    reason = scope_escape(path, memory_root)
    if reason is not None:
        log.warning("memory_file_out_of_scope", path=str(path), reason=reason)
    return reason is None


def scope_escape(path: Path, memory_root: Path) -> str | None:
    """Why the file at `path` may not be used for its scope, or None when it may (silent)."""
    base = Path(os.path.abspath(memory_root))
    lexical = Path(os.path.abspath(path))
    if not lexical.is_relative_to(base):
        return None  # not a memory file: not this rule's
    try:
        real_base, real = base.resolve(), lexical.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return "a symlink loop"
    if not _usable(real):
        return "not a regular file"
    parts = lexical.relative_to(base).parts
    if not parts:
        return None
    if len(parts) >= 3 and parts[0] == CHATS:
        inside = real.is_relative_to(real_base / CHATS / parts[1])
        return None if inside else "leads outside its chat's folder"
    if parts[0] == WORKING:
        return None if real == real_base.joinpath(*parts) else "a link in working memory"
    return _global_escape(real, real_base, base.parent.resolve())


def _global_escape(real: Path, real_base: Path, workspace: Path) -> str | None:
    if real.is_relative_to(real_base / CHATS) or real.is_relative_to(real_base / WORKING):
        return "leads into another scope's folder"
    if real.is_relative_to(workspace) and not real.is_relative_to(real_base):
        return "leads into the workspace outside memory/"
    return None


def _usable(real: Path) -> bool:
    """A regular file or a folder, or nothing yet."""
    try:
        mode = real.stat().st_mode
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)
