"""Where indexed text comes from: a memory path's scope, kind and time; exchanges; scope keys.

A scope key (`bot.models.scope_key`) is a `MemoryScope`'s chat key, or "" for the owner's
global memory. Paths are
relative to the workspace's `memory/` folder, in POSIX form:

    chats/<encoded chat key>/…   that chat's scope
    working/<encoded key>.md     the scope of the session's chat (its key is the session key)
    anything else                global ("")

Whose words a chunk holds (`origin_of`, `Chunk.origin`): "" for the people's own (and the
bot's), else what others' words it holds, so that they stay others' words when recall or a
memory tool brings them back (`bot.memory.trust`): "document" for a document's text
(`…/files/`), "quoted" for quoted material (`QUOTED.md`: each line names its source), and for
a daily note or an exchange the label its message was kept with (`bot.media.reading.carried`:
"forwarded", "document"), or the origin the session recorded for it (`ChatMessage.origin`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache

from bot.media.reading import carried
from bot.models import GLOBAL_KEY, ChatMessage
from bot.storage.workspace import MEDIA_FOLDER, QUOTED_NAME, decode_key, encode_key

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NOTE_TIME = re.compile(r"^\[(\d{1,2}):(\d{2})\]")
_HISTORY_HEADING = "## "


def scope_of(path: str) -> str:
    parts = path.split("/")
    if len(parts) >= 3 and parts[0] == "chats":
        return decode_key(parts[1])
    if len(parts) == 2 and parts[0] == "working" and parts[1].endswith(".md"):
        return decode_key(parts[1].removesuffix(".md"))
    return GLOBAL_KEY


def kind_of(path: str) -> str:
    """ "memory", "history", "working" or "note" (daily notes and any other markdown)."""
    parts = path.split("/")
    name = parts[-1]
    if parts[0] == "working":
        return "working"
    if name == "MEMORY.md":
        return "memory"
    if name == "HISTORY.md" or name.startswith("HISTORY-"):
        return "history"
    return "note"


def origin_of(path: str, text: str) -> str:
    """Whose words a chunk of the memory file `path` holds (see the module's docstring)."""
    parts = path.split("/")
    if MEDIA_FOLDER in parts[:-1]:
        return "document"
    if parts[-1] == QUOTED_NAME:
        return "quoted"
    return (carried(text) or "") if kind_of(path) == "note" else ""


def origin_of_turn(user: ChatMessage) -> str:
    """Whose words a past turn held, by its user message (a session's, `Exchange.origin`)."""
    return user.origin or carried(user.content or "") or ""


def file_day(path: str) -> date | None:
    """The day a daily note is for (`…/YYYY-MM-DD.md`), else None."""
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    if not _DAY.match(stem):
        return None
    try:
        return date.fromisoformat(stem)
    except ValueError:
        return None


def timed_by_text(path: str) -> bool:
    """Whether every chunk of the file is timed by its own lines (a daily note: its day and
    `[HH:mm]`), never by the file's mtime (`chunk_time`)."""
    return file_day(path) is not None


def chunk_time(path: str, first_line: str, fallback: float) -> float:
    """When a chunk was written, as epoch seconds: a daily note's day and `[HH:mm]`, a history
    entry's heading, else `fallback` (the file's mtime). Times are read as UTC: this only
    orders chunks for a recency tie-break."""
    day = file_day(path)
    if day is not None:
        return _note_time(day, first_line)
    if first_line.startswith(_HISTORY_HEADING) and kind_of(path) == "history":
        return _heading_time(first_line, fallback)
    return fallback


def _note_time(day: date, line: str) -> float:
    hour, minute = 0, 0
    if match := _NOTE_TIME.match(line):
        hour, minute = min(int(match[1]), 23), min(int(match[2]), 59)
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC).timestamp()


def _heading_time(line: str, fallback: float) -> float:
    try:
        # a consolidation's key follows as an HTML comment (`bot.memory.notes.history`)
        at = datetime.fromisoformat(line[len(_HISTORY_HEADING) :].split("<!--", 1)[0].strip())
    except ValueError:
        return fallback
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


@dataclass(frozen=True)
class Exchange:
    """One finished turn: what the user said and what the assistant answered."""

    session_key: str
    turn_id: str
    user: str
    assistant: str
    scope: str  # scope key: "" for the owner's global memory, else the chat key
    at: datetime
    origin: str = ""  # whose words (`origin_of_turn`): "" the people's own

    @property
    def path(self) -> str:
        """The synthetic path its chunks carry: `sessions/<encoded session key>#<turn id>`."""
        return f"sessions/{_encoded(self.session_key)}#{self.turn_id}"

    @property
    def text(self) -> str:
        return f"User: {self.user.strip()}\nAssistant: {self.assistant.strip()}"


@lru_cache(maxsize=4096)
def _encoded(key: str) -> str:
    return encode_key(key)  # quote() is a third of an exchange's ingest cost: remember it


def source_of_file(path: str) -> str:
    return f"file:{path}"


def source_of_exchange(path: str) -> str:
    """The source of an exchange's chunks, by its synthetic path."""
    return f"exchange:{path}"


def source_of_document(doc_id: str) -> str:
    return f"doc:{doc_id}"


def valid_scopes(scopes: Sequence[str]) -> tuple[str, ...]:
    """The scopes deduplicated, in order (an empty list sees nothing)."""
    return tuple(dict.fromkeys(scopes))
