"""Where a cited text came from: the provenance of a search hit's MEMORY.md lines (their side
file, `provenance.FactOrigins`) or of its item (its JSONL line), for `memory_search` to show.
Blocking, read-only; a citation that leads out of `memory/` or names nothing gives nothing."""

from __future__ import annotations

from pathlib import Path

from bot.memory.items.format import ItemFormatError, decode
from bot.memory.provenance import FactOrigins, brief, of_line
from bot.models import Provenance
from bot.storage.files import ON_DISK, Documents


class CitedOrigins:
    def __init__(self, memory_root: Path, documents: Documents = ON_DISK) -> None:
        self.root = memory_root
        self.documents = documents  # where the memory is kept (`Workspace.documents`)

    def describe(self, path: str, start: int, end: int) -> str:
        """`Ann (42), said by voice, telegram:42, 2026-11-20` (several joined by "; "), or ""
        when nothing is known of where the text came from."""
        found = [brief(origin) for origin in self.origins(path, start, end) if origin]
        return "; ".join(dict.fromkeys(found))

    def origins(self, path: str, start: int, end: int) -> list[Provenance | None]:
        name, _, item_id = path.partition("#")
        file = self._inside(name)
        if file is None:
            return []
        if item_id and name.endswith(".jsonl"):
            return [self._item(file, item_id)]
        if file.name == "MEMORY.md" and start:
            return self._lines(file, start, end)
        return []

    def _inside(self, name: str) -> Path | None:
        file = (self.root / name).resolve()
        root = self.root.resolve()
        return file if file.is_relative_to(root) else None

    def _item(self, file: Path, item_id: str) -> Provenance | None:
        needle = f'"id":"{item_id}"'
        for line in self._text(file).split("\n"):
            if needle in line:
                try:
                    return decode(line).provenance
                except ItemFormatError:
                    return None
        return None

    def _lines(self, file: Path, start: int, end: int) -> list[Provenance | None]:
        known = FactOrigins(file, self.documents).read()
        lines = self._text(file).splitlines()[start - 1 : end]
        return [of_line(known, line) for line in lines if line.strip()]

    def _text(self, file: Path) -> str:
        """The file's text (undecodable bytes replaced), "" when missing or unreadable."""
        try:
            data = self.documents.read(file)
        except OSError:
            return ""
        return "" if data is None else data.decode("utf-8", errors="replace")
