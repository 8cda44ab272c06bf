"""A person's edit of a whole memory file (the memory page's editor) meeting a change made since
they loaded it — a hand edit in an editor, a fact the bot appended: a three-way merge by lines
(`merge3`) of what they loaded, what the file is now and what they sent. Nothing is lost: where
both changed the same lines, both versions are kept, the file's first, and the place is named.
"""

from __future__ import annotations

from dataclasses import dataclass

from merge3 import Merge3


@dataclass(frozen=True)
class Merged:
    text: str
    conflicts: tuple[tuple[str, str], ...]  # (the file's lines, the page's lines) both kept


def merge(base: str, current: str, mine: str) -> Merged:
    """`mine` (an edit of `base`) applied to `current`, keeping both where they disagree."""
    lines = [base.splitlines(True), current.splitlines(True), mine.splitlines(True)]
    base_lines, theirs, ours = (_ended(part) for part in lines)
    out: list[str] = []
    conflicts: list[tuple[str, str]] = []
    for region in Merge3(base_lines, theirs, ours).merge_regions():
        match region:
            case ("conflict", _, _, file_start, file_end, page_start, page_end):
                file_part, page_part = theirs[file_start:file_end], ours[page_start:page_end]
                out += file_part + [line for line in page_part if line not in file_part]
                conflicts.append(("".join(file_part), "".join(page_part)))
            case ("unchanged", start, end):
                out += base_lines[start:end]
            case ("a" | "same", start, end):
                out += theirs[start:end]
            case ("b", start, end):
                out += ours[start:end]
    return Merged("".join(out), tuple(conflicts))


def _ended(lines: list[str]) -> list[str]:
    """The last line ended too, so a line added after it is a line of its own."""
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n"]
    return lines
