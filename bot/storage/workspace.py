"""The workspace layout: the one object that knows where every file lives."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from urllib.parse import quote, unquote

from bot.models import MemoryScope
from bot.storage.files import ensure_dir


def encode_key(key: str) -> str:
    """A session or chat key as a file name: no ':' or '/', and it round-trips."""
    return quote(key, safe="-_.")


def decode_key(name: str) -> str:
    return unquote(name)


def strays(path: Path, memory_root: Path) -> bool:
    """True when a file under `memory_root` really lies outside its scope's own folder — by a
    symlink, or a linked folder on its way — or in another scope's folder. Such a file is never
    read, searched, written, archived or forgotten (DESIGN §3: a link planted in a group's
    folder must not show the group the owner's memory, nor `/etc/passwd`). One exception: the
    owner's `MEMORY.md` may be a link to a file outside the workspace's memory (a synced
    folder). A path outside `memory_root` is not this rule's to judge (False)."""
    try:
        parts = path.relative_to(memory_root).parts
    except ValueError:
        return False
    root = memory_root.resolve()
    real = path.resolve()
    chats = root / "chats"
    if parts[:1] == ("chats",) and len(parts) > 2:
        return not real.is_relative_to(chats / parts[1])
    if parts[:1] == ("working",):  # every chat's working memory: each file only its own
        return real != root.joinpath(*parts)
    if real.is_relative_to(root):
        return real.is_relative_to(chats)
    return parts != ("MEMORY.md",)


def _is_day(stem: str) -> bool:
    try:
        date.fromisoformat(stem)
    except ValueError:
        return False
    return True


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root

    def ensure(self) -> None:
        for folder in (self.sessions_dir, self.memory_root, self.state_dir, self.inbox_dir):
            ensure_dir(folder)

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def archive_dir(self) -> Path:
        return self.sessions_dir / "archive"

    def session_path(self, key: str) -> Path:
        return self.sessions_dir / f"{encode_key(key)}.json"

    def archived_session_paths(self, key: str) -> list[Path]:
        """The archive files of one session key (closed by /new, or parts cut from it), oldest
        first."""
        return sorted(self.archive_dir.glob(f"{encode_key(key)}-*.json"))

    @property
    def memory_root(self) -> Path:
        return self.root / "memory"

    def strays(self, path: Path) -> bool:
        """`strays(path, self.memory_root)`: a memory file that is not its scope's to use."""
        return strays(path, self.memory_root)

    def memory_dir(self, scope: MemoryScope) -> Path:
        if scope.chat_key is None:
            return self.memory_root
        return self.memory_root / "chats" / encode_key(scope.chat_key)

    def long_term_path(self, scope: MemoryScope) -> Path:
        return self.memory_dir(scope) / "MEMORY.md"

    def daily_note_path(self, scope: MemoryScope, day: date) -> Path:
        return self.memory_dir(scope) / f"{day.isoformat()}.md"

    def daily_note_paths(self, scope: MemoryScope) -> list[Path]:
        """The scope's daily notes, oldest first."""
        folder = self.memory_dir(scope)
        return sorted(p for p in folder.glob("????-??-??.md") if _is_day(p.stem))

    def history_path(self, scope: MemoryScope) -> Path:
        return self.memory_dir(scope) / "HISTORY.md"

    def monthly_history_path(self, scope: MemoryScope, day: date) -> Path:
        return self.memory_dir(scope) / f"HISTORY-{day:%Y-%m}.md"

    def archive_note_dir(self, scope: MemoryScope) -> Path:
        """Where compacted daily notes go: out of the prompt, never deleted."""
        return self.memory_dir(scope) / "archive"

    def items_dir(self, scope: MemoryScope) -> Path:
        """Structured memory items (seed 000): JSONL, one folder per scope like all memory."""
        return self.memory_dir(scope) / "items"

    def episodic_items_path(self, scope: MemoryScope, day: date) -> Path:
        return self.items_dir(scope) / "episodic" / f"{day.isoformat()}.jsonl"

    def episodic_items_paths(self, scope: MemoryScope) -> list[Path]:
        """The scope's episodic item files, oldest first."""
        folder = self.items_dir(scope) / "episodic"
        found = (p for p in folder.glob("????-??-??.jsonl") if _is_day(p.stem))
        return sorted(found, key=lambda p: p.name)

    def semantic_items_path(self, scope: MemoryScope) -> Path:
        return self.items_dir(scope) / "semantic.jsonl"

    def procedural_items_path(self, scope: MemoryScope) -> Path:
        return self.items_dir(scope) / "procedural.jsonl"

    def working_memory_path(self, session_key: str) -> Path:
        return self.memory_root / "working" / f"{encode_key(session_key)}.md"

    def chat_scopes(self) -> list[MemoryScope]:
        """Every chat that has a memory folder."""
        folder = self.memory_root / "chats"
        if not folder.is_dir():
            return []
        return [MemoryScope(chat_key=decode_key(p.name)) for p in sorted(folder.iterdir())]

    @property
    def consolidation_dir(self) -> Path:
        """Durable consolidation jobs: written before a session is trimmed."""
        return self.state_dir / "consolidation"

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def inbox_dir(self) -> Path:
        return self.state_dir / "inbox"

    def channel_state_path(self, channel: str) -> Path:
        """What a channel keeps between runs (Telegram: the next update id to fetch)."""
        return self.state_dir / f"{channel}.json"

    @property
    def undo_dir(self) -> Path:
        """What /forget removed, kept for /undo for a few minutes (`bot.storage.undo`)."""
        return self.state_dir / "undo"

    @property
    def locks_dir(self) -> Path:
        """Lock files for read-modify-write, kept out of the folders people edit."""
        return self.state_dir / "locks"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"
