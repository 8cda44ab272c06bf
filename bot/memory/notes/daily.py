"""Daily notes (seed 000): one `[HH:mm] User: … | Assistant: …` line per exchange, append-only
(one `O_APPEND` write: a line a person adds meanwhile is kept). A note that leads out of its
scope's folder is left alone (`bot.storage.confined`): the line is not written."""

from __future__ import annotations

import asyncio
from datetime import datetime

from bot.models import MemoryScope
from bot.storage.files import append_text
from bot.storage.lines import without_controls
from bot.storage.workspace import Workspace


def note_line(
    at: datetime, user: str, assistant: str, *, user_chars: int, assistant_chars: int
) -> str:
    said, answered = _fold(user, user_chars), _fold(assistant, assistant_chars)
    return f"[{at:%H:%M}] User: {said} | Assistant: {answered}"


def _fold(text: str, limit: int) -> str:
    flat = " ".join(without_controls(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class DailyNotes:
    def __init__(self, workspace: Workspace, *, user_chars: int, assistant_chars: int) -> None:
        self.workspace = workspace
        self.user_chars = user_chars
        self.assistant_chars = assistant_chars

    async def append(self, scope: MemoryScope, at: datetime, user: str, assistant: str) -> None:
        line = note_line(
            at, user, assistant, user_chars=self.user_chars, assistant_chars=self.assistant_chars
        )
        path = self.workspace.daily_note_path(scope, at.date())
        if self.workspace.inside_scope(path):
            await asyncio.to_thread(append_text, path, line + "\n")
