"""Where a cited text came from: the provenance of a search hit's MEMORY.md lines (their side
file, `provenance.FactOrigins`) or of its item (its JSONL line), for `memory_search` to show.
Blocking, read-only; a citation that leads out of `memory/` or names nothing gives nothing."""

from __future__ import annotations

from pathlib import Path

from bot.memory.items.format import ItemFormatError, decode
from bot.memory.provenance import FactOrigins, brief, of_line
from bot.models import Provenance
from bot.storage.files import read_text


class CitedOrigins:
    def __init__(self, memory_root: Path) -> None:
        self.root = memory_root

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
        for line in (read_text(file) or "").split("\n"):
            if needle in line:
                try:
                    return decode(line).provenance
                except ItemFormatError:
                    return None
        return None

    def _lines(self, file: Path, start: int, end: int) -> list[Provenance | None]:
        known = FactOrigins(file).read()
        lines = (read_text(file) or "").splitlines()[start - 1 : end]
        return [of_line(known, line) for line in lines if line.strip()]
