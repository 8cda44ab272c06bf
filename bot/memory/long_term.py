"""Long-term memory: `MEMORY.md`, hand-editable, read fresh every turn."""

from __future__ import annotations

from bot.models import MemoryScope
from bot.storage.files import read_text
from bot.storage.workspace import Workspace


class LongTermMemory:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def read(self, scope: MemoryScope) -> str:
        return (read_text(self.workspace.long_term_path(scope)) or "").strip()
