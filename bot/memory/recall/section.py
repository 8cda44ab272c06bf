"""The `# Memory` prompt section: its format, and the token budget it must fit.

    # Memory
    ## Long-term Memory            the scope's MEMORY.md
    ## Chat Memory                 the chat's own MEMORY.md (the owner's private chat only)
    ## Working Memory (updated 2 hours ago)
    ## Today's Notes
    ## Recent Context
    ### YYYY-MM-DD                 newest day first

The parts are filled in that order, which is also their priority. Each part is cut at the first
line that no longer fits (daily notes keep their newest lines), so what is shown is contiguous.
Nothing is cut silently: the section ends by saying how many lines it left out. Empty parts are
left out, and with no memory at all there is no header either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

from bot.memory.notes.working import WorkingNote
from bot.storage.lines import FileLines

HEADER = "# Memory"
LONG_TERM = "## Long-term Memory"  # the section's headings; the pack's layers share three
WORKING = "## Working Memory"
RECENT = "## Recent Context"
OMITTED = "({count} more lines not shown: available via memory search and /memory)"

Count = Callable[[str], int]


@dataclass(frozen=True)
class MemorySnapshot:
    """What one chat's memory files hold right now; None where a file is missing or refused."""

    long_term: FileLines | None = None
    chat: FileLines | None = None
    working: WorkingNote | None = None
    working_lines: int | None = None  # its first lines shown at most (`working_top_k`)
    today: FileLines | None = None
    recent: Sequence[tuple[date, FileLines]] = ()  # newest first


@dataclass(frozen=True)
class MemoryView:
    text: str  # the whole section, "" when there is no memory
    omitted_lines: int  # lines the budget left out (announced at the end of `text`)
    parts: tuple[str, ...] = ()  # `text` after its header: each part opens with its heading


@dataclass(frozen=True)
class _Part:
    heading: str  # "### 2026-11-20", or "" for a section's only part
    lines: FileLines
    keep_last: bool  # daily notes: when short of room, the newest (last) lines stay


@dataclass(frozen=True)
class _Section:
    heading: str
    parts: tuple[_Part, ...]


def render_memory(snapshot: MemorySnapshot, *, budget: int, count: Count) -> MemoryView:
    """The section within `budget` tokens (as `count` counts them), and what it left out."""
    sections = _sections(snapshot)
    total = sum(part.lines.total for section in sections for part in section.parts)
    if total == 0:
        return MemoryView(text="", omitted_lines=0)
    reserve = count(HEADER) + count(OMITTED.format(count=total)) + 4
    slack = 0
    while True:  # line costs are summed; the joined text is what counts, so check it
        view, shown = _fill(sections, _Room(budget - reserve - slack, count), total)
        over = count(view.text) - budget
        if over <= 0 or shown == 0:
            return view
        slack += over


def _sections(snapshot: MemorySnapshot) -> list[_Section]:
    found = [
        _single(LONG_TERM, snapshot.long_term),
        _single("## Chat Memory", snapshot.chat),
    ]
    if working := snapshot.working:
        lines = first_lines(working.text, snapshot.working_lines)
        found.append(_single(f"{WORKING} ({working.age})", lines))
    days = tuple(_Part(f"### {day.isoformat()}", lines, True) for day, lines in snapshot.recent)
    found += [
        _single("## Today's Notes", snapshot.today, keep_last=True),
        _Section(RECENT, days),
    ]
    return [section for section in found if section.parts]


def first_lines(text: str, most: int | None) -> FileLines:
    """The text's first `most` non-blank lines (all when None); the rest counted as unread,
    so the section's last line says they were left out."""
    lines = [line for line in text.splitlines() if line.strip()]
    if most is None or len(lines) <= most:
        return FileLines(lines=tuple(text.splitlines()))
    return FileLines(lines=tuple(lines[:most]), unread=len(lines) - most)


def _single(heading: str, lines: FileLines | None, *, keep_last: bool = False) -> _Section:
    return _Section(heading, (_Part("", lines, keep_last),) if lines else ())


class _Room:
    """The tokens left; each piece costs its tokens plus one for the line break."""

    def __init__(self, tokens: int, count: Count) -> None:
        self.tokens = tokens
        self.count = count

    def take(self, text: str) -> int | None:
        cost = self.count(text) + 1
        if cost > self.tokens:
            return None
        self.tokens -= cost
        return cost

    def give_back(self, cost: int) -> None:
        self.tokens += cost


def _fill(sections: list[_Section], room: _Room, total: int) -> tuple[MemoryView, int]:
    texts, shown = [], 0
    for section in sections:
        text, lines = _fit_section(section, room)
        if text:
            texts.append(text)
            shown += lines
    omitted = total - shown
    if omitted:
        texts.append(OMITTED.format(count=omitted))
    text = "\n\n".join([HEADER, *texts])
    return MemoryView(text=text, omitted_lines=omitted, parts=tuple(texts)), shown


def _fit_section(section: _Section, room: _Room) -> tuple[str, int]:
    """The section's text and its non-blank lines shown ("" and 0 when nothing fits)."""
    cost = room.take(section.heading)
    if cost is None:
        return "", 0
    texts, shown = [], 0
    for part in section.parts:
        kept = _fit_part(part, room)
        if kept:
            heading = [part.heading] if part.heading else []
            texts.append("\n".join([*heading, *kept]))
            shown += sum(1 for line in kept if line.strip())
    if not texts:
        room.give_back(cost)
        return "", 0
    return section.heading + "\n" + "\n\n".join(texts), shown


def _fit_part(part: _Part, room: _Room) -> list[str]:
    """The lines of `part` that fit, in file order; none when even its first does not."""
    cost = room.take(part.heading) if part.heading else 0
    if cost is None:
        return []
    lines = part.lines.lines
    kept: list[str] = []
    for line in reversed(lines) if part.keep_last else lines:
        if room.take(line) is None:
            break
        kept.append(line)
    if part.keep_last:
        kept.reverse()
    while kept and not kept[0].strip():  # a cut can leave a blank line at the edge
        kept.pop(0)
    while kept and not kept[-1].strip():
        kept.pop()
    if not kept:
        room.give_back(cost)
    return kept
