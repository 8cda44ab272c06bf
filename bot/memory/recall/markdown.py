"""The markdown part of `# Memory`: what a chat's turn sees, read fresh from its files.

Who sees what (`bot.memory.scopes`): the owner's private chat has the global scope and sees the
global MEMORY.md and daily notes plus that chat's own chat memory; every other chat sees only its
own folder. Nothing outside `visible_scopes` is ever read for a chat.

Nothing twice: a daily note line of an exchange the request's messages carry anyway (`carried`,
its body as `NoteFormat.body` writes it) is left out, so the budget goes to what the model does
not already see.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import date, timedelta

from bot.memory.notes.daily import body_of
from bot.memory.notes.supersede import current_lines
from bot.memory.notes.working import WorkingMemory
from bot.memory.recall.section import Count, MemorySnapshot, MemoryView, render_memory
from bot.memory.scopes import chat_scope
from bot.models import MemoryScope
from bot.settings import MemorySettings
from bot.storage.lines import FileLines, LineReader
from bot.storage.workspace import Workspace


class MarkdownMemory:
    def __init__(
        self,
        workspace: Workspace,
        reader: LineReader,
        working: WorkingMemory,
        count: Count,
        *,
        recent_days: int,
        budget_tokens: int,
        working_lines: int | None = None,  # working memory's first lines shown; None: all
    ) -> None:
        self.workspace = workspace
        self.reader = reader
        self.working = working
        self.count = count
        self.recent_days = recent_days
        self.budget_tokens = budget_tokens
        self.working_lines = working_lines

    @classmethod
    def from_settings(
        cls, config: MemorySettings, workspace: Workspace, working: WorkingMemory, count: Count
    ) -> MarkdownMemory:
        return cls(
            workspace,
            LineReader(memory_root=workspace.memory_root, documents=workspace.documents),
            working,
            count,
            recent_days=config.recent_days,
            budget_tokens=config.prompt_budget_tokens,
            working_lines=config.items.working_top_k,
        )

    async def view(
        self,
        scope: MemoryScope,
        session_key: str,
        today: date,
        *,
        carried: frozenset[str] = frozenset(),  # note bodies of exchanges the request carries
        budget: int | None = None,  # tokens; `budget_tokens` when None
    ) -> MemoryView:
        """The rendered section within the token budget (file reads in a thread)."""
        tokens = self.budget_tokens if budget is None else min(budget, self.budget_tokens)
        return await asyncio.to_thread(self._view, scope, session_key, today, carried, tokens)

    def _view(
        self,
        scope: MemoryScope,
        session_key: str,
        today: date,
        carried: frozenset[str],
        tokens: int,
    ) -> MemoryView:
        snapshot = self.snapshot(scope, session_key, today, carried=carried)
        return render_memory(snapshot, budget=tokens, count=self.count)

    def snapshot(
        self,
        scope: MemoryScope,
        session_key: str,
        today: date,
        *,
        carried: frozenset[str] = frozenset(),
    ) -> MemorySnapshot:
        chat = chat_scope(scope, session_key)
        return MemorySnapshot(
            long_term=_current(self.reader.head(self.workspace.long_term_path(scope))),
            chat=_current(self.reader.head(self.workspace.long_term_path(chat))) if chat else None,
            working=self.working.read_fresh(session_key),
            working_lines=self.working_lines,
            today=self._note(scope, today, carried),
            recent=self._recent(scope, today, carried),
        )

    def _recent(
        self, scope: MemoryScope, today: date, carried: frozenset[str]
    ) -> list[tuple[date, FileLines]]:
        """The notes of the `recent_days` days before today, newest first."""
        found = []
        for back in range(1, self.recent_days + 1):
            day = today - timedelta(days=back)
            if lines := self._note(scope, day, carried):
                found.append((day, lines))
        return found

    def _note(self, scope: MemoryScope, day: date, carried: frozenset[str]) -> FileLines | None:
        lines = self.reader.tail(self.workspace.daily_note_path(scope, day))
        return _without(lines, carried) if lines and carried else lines


def _current(lines: FileLines | None) -> FileLines | None:
    """MEMORY.md without its superseded lines: only a fact's current value is shown."""
    if lines is None:
        return None
    kept = current_lines(lines.lines)
    return lines if len(kept) == len(lines.lines) else replace(lines, lines=kept)


def _without(note: FileLines, carried: frozenset[str]) -> FileLines | None:
    """The note without the lines of exchanges the request carries; None when none is left."""
    kept = tuple(line for line in note.lines if body_of(line) not in carried)
    if len(kept) == len(note.lines):
        return note
    if not any(line.strip() for line in kept) and not note.unread:
        return None
    return replace(note, lines=kept)
