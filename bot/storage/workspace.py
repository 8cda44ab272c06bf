"""The workspace layout: the one object that knows where every file lives (and, by
`bot.storage.confined`, where a scope's file may lead)."""

from __future__ import annotations

import os
import stat
import tempfile
from datetime import date
from pathlib import Path
from urllib.parse import quote, unquote

import structlog

from bot.errors import StartupError
from bot.models import MemoryScope
from bot.storage.confined import inside_scope
from bot.storage.files import ON_DISK, Documents, ensure_dir

log = structlog.get_logger(__name__)
MEDIA_FOLDER = "files"  # beside a scope's memory: the files that came with messages
QUOTED_NAME = "QUOTED.md"  # beside a scope's MEMORY.md: quoted material (`bot.memory.notes.quoted`)


def _private(root: Path) -> None:
    """`root` without group and other permissions (logged when it had some)."""
    mode = stat.S_IMODE(root.stat().st_mode)
    if mode & 0o077 == 0:
        return
    try:
        os.chmod(root, mode & 0o700)
    except OSError as exc:  # not ours: doctor says what to do if it cannot be written
        log.warning("workspace_not_private", path=str(root), mode=oct(mode), error=str(exc))
        return
    log.info("workspace_made_private", path=str(root), was=oct(mode))


def encode_key(key: str) -> str:
    """A session or chat key as a file name: no ':' or '/', and it round-trips."""
    return quote(key, safe="-_.")


def decode_key(name: str) -> str:
    return unquote(name)


_LEGACY_COLON = "%3A"  # how `encode_key` writes ':', which session file names used to carry


def file_key(key: str) -> str:
    """A session key as a readable file name: `telegram:-100123:7` → `telegram_-100123_7`.
    ':' becomes '_' (a '_' of the key itself is %-escaped, as is anything not safe in a file
    name), so it round-trips (`key_of_file`)."""
    return quote(key, safe="-.").replace("_", "%5F").replace(_LEGACY_COLON, "_")


def key_of_file(name: str) -> str:
    """The session key a file name (`file_key`'s, or an older `encode_key` one) stands for."""
    if _LEGACY_COLON in name:
        return unquote(name)
    return unquote(name.replace("_", ":"))


def _is_day(stem: str) -> bool:
    try:
        date.fromisoformat(stem)
    except ValueError:
        return False
    return True


class Workspace:
    def __init__(self, root: Path, documents: Documents | None = None) -> None:
        self.root = root
        # where its files are kept: on this disk, or shared by the replicas (`bot.app.store`)
        self.documents: Documents = documents or ON_DISK

    @classmethod
    def opened(cls, root: Path) -> Workspace:
        """The workspace at `root`, created if need be; a `StartupError` that says how to fix
        one the bot may not write."""
        workspace = cls(root)
        if (problem := workspace.unwritable()) is not None:
            raise StartupError(problem)
        workspace.ensure()
        return workspace

    def unwritable(self) -> str | None:
        """Why this user cannot keep the workspace (it, or a folder of it that exists, is not a
        writable folder; or it is missing and cannot be made) and how to fix it; None when it
        can. Tried with a real file, as permission bits do not tell a read-only mount."""
        if not self.root.exists():
            parent = next(p for p in self.root.absolute().parents if p.exists())
            if _can_write(parent):
                return None
            return (
                f"workspace {self.root} does not exist and {parent} is not writable: create it "
                f"(`sudo mkdir -p {self.root}`) and {_own_it(self.root)}"
            )
        if not self.root.is_dir():
            return f"workspace {self.root} is not a folder: set BOT_WORKSPACE to a folder"
        folders = (self.root, self.sessions_dir, self.memory_root, self.state_dir, self.index_dir)
        for folder in folders:
            if folder.exists() and not _can_write(folder):
                return f"workspace folder {folder} is not writable: {_own_it(self.root)}"
        return None

    def ensure(self) -> None:
        """The workspace's folders, made 0700; a root that others may read (a folder made by
        hand or by git) is made private too, as everything in it is the owner's."""
        ensure_dir(self.root)
        _private(self.root)
        for folder in (self.sessions_dir, self.memory_root, self.state_dir, self.inbox_dir):
            ensure_dir(folder)
        self._rename_old_session_files()

    def _rename_old_session_files(self) -> None:
        """Session files named the old way (`telegram%3A1001.json`) get their readable names
        (`telegram_1001.json`); one whose new name is taken is left as it is."""
        for folder in (self.sessions_dir, self.archive_dir):
            if not folder.is_dir():
                continue
            for path in folder.glob(f"*{_LEGACY_COLON}*.json"):
                target = path.with_name(file_key(unquote(path.name)))
                if not target.exists():
                    os.replace(path, target)

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def archive_dir(self) -> Path:
        return self.sessions_dir / "archive"

    def session_path(self, key: str) -> Path:
        return self.sessions_dir / f"{file_key(key)}.json"

    def archived_session_paths(self, key: str) -> list[Path]:
        """The archive files of one session key (closed by /new, or parts cut from it), oldest
        first."""
        return self.documents.listing(self.archive_dir, f"{file_key(key)}-*.json")

    @property
    def memory_root(self) -> Path:
        return self.root / "memory"

    def memory_dir(self, scope: MemoryScope) -> Path:
        if scope.chat_key is None:
            return self.memory_root
        return self.memory_root / "chats" / encode_key(scope.chat_key)

    def long_term_path(self, scope: MemoryScope) -> Path:
        return self.memory_dir(scope) / "MEMORY.md"

    def daily_note_path(self, scope: MemoryScope, day: date) -> Path:
        return self.memory_dir(scope) / f"{day.isoformat()}.md"

    def daily_note_paths(self, scope: MemoryScope) -> list[Path]:
        """The scope's daily notes, oldest first (none that leads out of the scope)."""
        folder = self.memory_dir(scope)
        found = [p for p in self.documents.listing(folder, "????-??-??.md") if _is_day(p.stem)]
        return [path for path in found if self.inside_scope(path)]

    def media_path(self, scope: MemoryScope, name: str) -> Path:
        """A file that came with a message (a photo, a voice note …), kept beside the scope's
        memory (`bot.media`): `files/<name>`."""
        return self.media_dir(scope) / name

    def media_dir(self, scope: MemoryScope) -> Path:
        """The scope's kept files, and the text of its documents (`<file>.md`)."""
        return self.memory_dir(scope) / MEDIA_FOLDER

    def inside_scope(self, path: Path) -> bool:
        """Whether a memory file may be used for the scope it lies in (warned when not)."""
        return inside_scope(path, self.memory_root)

    def history_path(self, scope: MemoryScope) -> Path:
        return self.memory_dir(scope) / "HISTORY.md"

    def monthly_history_path(self, scope: MemoryScope, day: date) -> Path:
        return self.memory_dir(scope) / f"HISTORY-{day:%Y-%m}.md"

    def archive_note_dir(self, scope: MemoryScope) -> Path:
        """Where compacted daily notes go: out of the prompt, never deleted."""
        return self.memory_dir(scope) / "archive"

    def items_dir(self, scope: MemoryScope) -> Path:
        """Structured memory items: JSONL, one folder per scope like all memory."""
        return self.memory_dir(scope) / "items"

    def episodic_items_path(self, scope: MemoryScope, day: date) -> Path:
        return self.items_dir(scope) / "episodic" / f"{day.isoformat()}.jsonl"

    def episodic_items_paths(self, scope: MemoryScope) -> list[Path]:
        """The scope's episodic item files, oldest first."""
        folder = self.items_dir(scope) / "episodic"
        found = self.documents.listing(folder, "????-??-??.jsonl")
        return [path for path in found if _is_day(path.stem)]

    def semantic_items_path(self, scope: MemoryScope) -> Path:
        return self.items_dir(scope) / "semantic.jsonl"

    def procedural_items_path(self, scope: MemoryScope) -> Path:
        return self.items_dir(scope) / "procedural.jsonl"

    def reminders_path(self, scope: MemoryScope) -> Path:
        """The scope's reminders and scheduled tasks, one a line (`bot.reminders.store`)."""
        return self.memory_dir(scope) / "reminders.jsonl"

    def working_memory_path(self, session_key: str) -> Path:
        return self.memory_root / "working" / f"{encode_key(session_key)}.md"

    def chat_scopes(self) -> list[MemoryScope]:
        """Every chat that has a memory folder, or documents in one (the replicas share them)."""
        folder = self.memory_root / "chats"
        names = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
        names.update(p.relative_to(folder).parts[0] for p in self.documents.walk(folder))
        return [MemoryScope(chat_key=decode_key(name)) for name in sorted(names)]

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

    @property
    def heartbeat_path(self) -> Path:
        """Touched after every poll (`bot.storage.heartbeat`)."""
        return self.state_dir / "heartbeat"

    def channel_state_path(self, channel: str) -> Path:
        """What a channel keeps between runs (Telegram: the next update id to fetch)."""
        return self.state_dir / f"{channel}.json"

    @property
    def roster_path(self) -> Path:
        """Claimed owners, paired users, pairing requests (`bot.storage.roster`)."""
        return self.state_dir / "paired.json"

    def chatter_path(self, key: str) -> Path:
        """A group's messages not addressed to the bot since its last answer there
        (`bot.storage.chatter`)."""
        return self.state_dir / "chatter" / f"{encode_key(key)}.json"

    @property
    def receipts_path(self) -> Path:
        """Memory receipts and the edits waiting for their text (`bot.receipts`)."""
        return self.state_dir / "receipts.json"

    @property
    def door_told_path(self) -> Path:
        """The one-time notices each stranger heard (`bot.turn.notices`)."""
        return self.state_dir / "door_told.json"

    @property
    def web_path(self) -> Path:
        """The memory page's sign-in links and sessions, hashed (`bot.web.signin`)."""
        return self.state_dir / "web.json"

    @property
    def timezones_path(self) -> Path:
        """The time zone each person set (`bot.reminders.zones`)."""
        return self.state_dir / "timezones.json"

    @property
    def task_tokens_path(self) -> Path:
        """The tokens the scheduled tasks used today (`bot.reminders.tasks.DailySpend`)."""
        return self.state_dir / "task_tokens.json"

    @property
    def usage_path(self) -> Path:
        """Tokens and model calls per day, chat and kind (`bot.usage`)."""
        return self.state_dir / "usage.json"

    @property
    def undo_dir(self) -> Path:
        """What /forget removed, kept for /undo for a few minutes (`bot.storage.undo`)."""
        return self.state_dir / "undo"

    @property
    def locks_dir(self) -> Path:
        """Where the lock file for read-modify-write is (`FileLocks`), out of the folders
        people edit."""
        return self.state_dir / "locks"

    @property
    def logs_dir(self) -> Path:
        """Logs of `python -m bot chat`, and the files its replies send (/context full)."""
        return ensure_dir(self.root / "logs")

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def models_dir(self) -> Path:
        """Embedding models fetched on first use (`bot.index.embedding.fetch_model`)."""
        return self.root / "models"


def _can_write(folder: Path) -> bool:
    if not folder.is_dir():
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _own_it(root: Path) -> str:
    """The fix for a workspace this user cannot write."""
    uid, gid = os.getuid(), os.getgid()
    return (
        f"give it to this user (uid {uid}): `sudo chown -R {uid}:{gid} {root}`, or set "
        "BOT_WORKSPACE to a folder you own"
    )
