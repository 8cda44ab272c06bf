"""The `# Memory` prompt section in seed 000's format; empty parts are left out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class MemorySnapshot:
    long_term: str
    today: str
    recent: Sequence[tuple[date, str]]  # newest first


def render_memory(snapshot: MemorySnapshot) -> str:
    parts = []
    if snapshot.long_term:
        parts.append(f"## Long-term Memory\n{snapshot.long_term}")
    if snapshot.today:
        parts.append(f"## Today's Notes\n{snapshot.today}")
    if snapshot.recent:
        days = "\n\n".join(f"### {day.isoformat()}\n{text}" for day, text in snapshot.recent)
        parts.append(f"## Recent Context\n{days}")
    if not parts:
        return ""
    return "# Memory\n\n" + "\n\n".join(parts)
