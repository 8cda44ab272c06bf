"""The inventory of one chat's memory: what `/memory` shows.

Whose memory it is, the size of each file, the last consolidation, the working memory's age,
how many lines the prompt's budget leaves out, the first lines of MEMORY.md with who said each
(its provenance), and how many quotes wait for an owner. It reads only
what the chat may see (`visible_scopes`) — of a file that leads out of its scope's folder not
even the size (`bot.storage.confined`) — and never writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import date, datetime
from pathlib import Path

from bot.memory.notes import quoted
from bot.memory.notes.history import HistoryLog
from bot.memory.notes.working import WorkingMemory
from bot.memory.provenance import FactOrigins, brief, of_line
from bot.memory.recall.markdown import MarkdownMemory
from bot.memory.scopes import chat_scope
from bot.models import MemoryScope, Provenance
from bot.storage.lines import LineReader
from bot.storage.workspace import Workspace

PREVIEW_LINES = 15
PREVIEW_CHARS = 200
OUT_OF_SCOPE = "leads outside this chat's memory (left alone)"
QUOTES = "Quoted, not kept: {count} (/keep lists them)"


class MemoryInventory:
    def __init__(
        self,
        workspace: Workspace,
        reader: LineReader,
        recall: MarkdownMemory,
        history: HistoryLog,
        working: WorkingMemory,
        *,
        now: Callable[[], datetime],
    ) -> None:
        self.workspace = workspace
        self.reader = reader
        self.recall = recall
        self.history = history
        self.working = working
        self.now = now

    async def describe(self, scope: MemoryScope, session_key: str) -> str:
        today = self.now().date()
        view = await self.recall.view(scope, session_key, today)
        files, preview = await asyncio.to_thread(self._read, scope, session_key, today)
        budget = f"budget {self.recall.budget_tokens:,} tokens"
        left_out = _plural(view.omitted_lines, "line")
        prompt = (
            f"Prompt: {left_out} left out ({budget}; search or read the files)"
            if view.omitted_lines
            else f"Prompt: all of it fits ({budget})"
        )
        return "\n".join([*files, prompt, "", *preview])

    def _read(
        self, scope: MemoryScope, session_key: str, today: date
    ) -> tuple[list[str], list[str]]:
        return self._files(scope, session_key, today), self._preview(scope)

    def _files(self, scope: MemoryScope, session_key: str, today: date) -> list[str]:
        whose = "global (your private memory)" if scope.is_global else "this chat's own"
        chat = chat_scope(scope, session_key)
        notes = len(self.workspace.daily_note_paths(scope))
        today_size = self._size(self.workspace.daily_note_path(scope, today))
        last = self.history.last_consolidation(scope)
        consolidated = (
            f"last consolidation {last:%Y-%m-%d %H:%M}" if last else "no consolidation yet"
        )
        compacted = self.history.last_compaction(scope)
        if compacted is not None:
            consolidated += f"; last compaction {compacted:%Y-%m-%d %H:%M}"
        working = self.working.read_fresh(session_key)
        lines = [f"Memory: {whose}", self._file("MEMORY.md", self.workspace.long_term_path(scope))]
        if chat is not None:
            lines.append(self._file("Chat memory", self.workspace.long_term_path(chat)))
        return [
            *lines,
            f"Daily notes: {_plural(notes, 'file')}; today's: {today_size}",
            f"HISTORY.md: {self._size(self.workspace.history_path(scope))}; {consolidated}",
            f"Working memory: {working.age if working else 'none'}",
        ]

    def _file(self, label: str, path: Path) -> str:
        size = self._size(path)
        if size == OUT_OF_SCOPE or not self._exists(path):
            return f"{label}: {size}"
        lines = self.reader.head(path)
        if lines is None:
            return f"{label}: {size}, not readable as text (left out of the prompt)"
        return f"{label}: {size}, {_plural(lines.total, 'line')}"

    def _preview(self, scope: MemoryScope) -> list[str]:
        path = self.workspace.long_term_path(scope)
        if not self.workspace.inside_scope(path):
            return [f"No preview: MEMORY.md {OUT_OF_SCOPE}."]
        lines = self.reader.head(path)
        if lines is None and self._exists(path):
            return ["No preview: MEMORY.md is not readable as text."]
        if lines is None or not lines.lines:
            return ["MEMORY.md is empty."]
        known = FactOrigins(path, self.workspace.documents).read()
        shown = [_said(_clip(line), known) for line in lines.lines[:PREVIEW_LINES]]
        more = len(lines.lines) - len(shown) + lines.unread
        waiting = len(quoted.pending(path, self.workspace.documents))
        return [
            f"MEMORY.md, first {_plural(len(shown), 'line')}:",
            *shown,
            *([f"… and {_plural(more, 'more line')}"] if more > 0 else []),
            *([QUOTES.format(count=_plural(waiting, "quote"))] if waiting else []),
        ]

    def _size(self, path: Path) -> str:
        if not self.workspace.inside_scope(path):
            return OUT_OF_SCOPE
        try:
            version = self.workspace.documents.version(path)
        except OSError:
            return "none"
        return "none" if version is None else f"{version[1]:,} bytes"

    def _exists(self, path: Path) -> bool:
        try:
            return self.workspace.documents.version(path) is not None
        except OSError:
            return False


def _said(line: str, known: Mapping[str, Provenance]) -> str:
    """The line, and who said it, how and when (a line written by hand: the line alone)."""
    origin = of_line(known, line)
    return f"{line}  ({brief(origin)})" if origin else line


def _clip(line: str) -> str:
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"
