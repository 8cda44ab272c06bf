"""Daily notes: one `[HH:mm] User: … | Assistant: …` line per exchange, append-only
(one `O_APPEND` write: a line a person adds meanwhile is kept). A note that leads out of its
scope's folder is left alone (`bot.storage.confined`): the line is not written.

The one owner of the line's format: `NoteFormat` writes it, and says what the line of an
exchange reads without its clock (`body`, `body_of`), so the prompt can leave out the lines of
exchanges its messages carry anyway.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

from bot.models import MemoryScope
from bot.settings import MemorySettings
from bot.storage.files import Documents
from bot.storage.lines import without_controls
from bot.storage.workspace import Workspace

_CLOCK = re.compile(r"^\[\d{1,2}:\d{2}\]\s*")


def note_line(
    at: datetime, user: str, assistant: str, *, user_chars: int, assistant_chars: int
) -> str:
    return NoteFormat(user_chars, assistant_chars).line(at, user, assistant)


@dataclass(frozen=True)
class NoteFormat:
    user_chars: int  # each side is folded to one line and cut to its length (the user's, of
    # each message the turn joins: quick follow-ups answered together keep all their words)
    assistant_chars: int

    @classmethod
    def from_settings(cls, config: MemorySettings) -> NoteFormat:
        return cls(config.note_user_chars, config.note_assistant_chars)

    def line(self, at: datetime, user: str, assistant: str, *, messages: int = 1) -> str:
        return f"[{at:%H:%M}] {self.body(user, assistant, messages=messages)}"

    def body(self, user: str, assistant: str, *, messages: int = 1) -> str:
        """The exchange's line without its clock; `messages`: how many the user side joins."""
        room = self.user_chars * messages + messages - 1  # and the breaks between them
        said, answered = _fold(user, room), _fold(assistant, self.assistant_chars)
        return f"User: {said} | Assistant: {answered}"

    def bodies(self, exchanges: Iterable[tuple[str, str]]) -> frozenset[str]:
        """The bodies of (user, assistant) exchanges."""
        return frozenset(self.body(user, assistant) for user, assistant in exchanges)


def body_of(line: str) -> str:
    """A note line without its `[HH:mm]` clock (the line itself when it has none)."""
    return _CLOCK.sub("", line, count=1)


def _fold(text: str, limit: int) -> str:
    flat = " ".join(without_controls(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class DailyNotes:
    def __init__(self, workspace: Workspace, fmt: NoteFormat) -> None:
        self.workspace = workspace
        self.documents = workspace.documents  # the files, or shared by the replicas
        self.format = fmt

    async def append_once(
        self,
        scope: MemoryScope,
        at: datetime,
        user: str,
        assistant: str,
        *,
        since: date,
        messages: int = 1,
    ) -> bool:
        """Append the exchange's line unless a note from `since` to `at`'s day holds it (a
        turn saved just before a kill, its line perhaps not written); whether it appended."""
        body = self.format.body(user, assistant, messages=messages)
        days = (since + timedelta(days=n) for n in range(max(0, (at.date() - since).days) + 1))
        for day in days:
            path = self.workspace.daily_note_path(scope, day)
            held = self.workspace.inside_scope(path) and await asyncio.to_thread(
                _holds, self.documents, path, body
            )
            if held:
                return False
        await self.append(scope, at, user, assistant, messages=messages)
        return True

    async def append(
        self, scope: MemoryScope, at: datetime, user: str, assistant: str, *, messages: int = 1
    ) -> None:
        line = self.format.line(at, user, assistant, messages=messages)
        path = self.workspace.daily_note_path(scope, at.date())
        if self.workspace.inside_scope(path):
            data = (line + "\n").encode("utf-8")
            await asyncio.to_thread(self.documents.append, path, data, durable=False)


def _holds(documents: Documents, path: Path, body: str) -> bool:
    """Whether the note at `path` has a line reading `body` after its clock."""
    data = documents.read(path)
    if data is None:
        return False
    text = data.decode("utf-8", errors="replace")
    return any(body_of(line) == body for line in text.splitlines())
