"""`memory_get`: the model reads a slice of one memory file, with line numbers.

Paths are relative to `memory/` (a leading `memory/` is accepted) and may be a citation from
`memory_search` (`2026-11-20.md#L3-L9` reads lines 3 to 9) or from `# Relevant Memory`
(`bot.memory.recall.relevant`: the notes' folder named once, a hit's day and its `[L3-L9]`; an
item by its id alone, `s-1a2b3c4d5e`, read from the item files of the chat's visible scopes,
where the id says: `ItemPaths`).
Refused, with a sentence saying why: absolute paths, `..`, a symlink that leads out of its scope's
folder (`bot.storage.confined`: a chat's file must stay in that chat's folder, a global one may lead
anywhere but into another scope's), a `sessions/…` citation (a past conversation, not a file), a
file that is not text, and — privacy, `bot.memory.scopes` — any file outside the chat's visible
scopes (`visible_scopes`): the owner's private chat reads global files and its own `chats/<key>/`,
every other chat only its own `chats/<key>/`; working memory only the calling session's own. A file
that does not exist reads as empty, not as an error. Files are read as the workspace's documents
(`Workspace.documents`: on this disk, or shared by the replicas).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from bot.errors import ToolError
from bot.memory.scopes import visible_scopes
from bot.memory.trust import in_file
from bot.models import MemoryScope, ToolSpec
from bot.storage.confined import inside_scope
from bot.storage.files import ON_DISK, Documents
from bot.storage.lines import decode_text, without_controls
from bot.storage.workspace import encode_key
from bot.tools import arguments
from bot.tools.registry import ToolContext

MAX_LINES = 200
DEFAULT_LINES = 40
MAX_PATH_CHARS = 500
LINE_CHARS = 2000  # a longer line is cut: one giant line must not flood the prompt
SNIFF_BYTES = 8192  # read to tell text from binary
NO_SUCH_FILE = "(empty: no such file)"
PATH_HINT = "give a file path relative to memory/, e.g. MEMORY.md or 2026-11-20.md#L3-L9"

_RANGE = re.compile(r"^L(\d+)(?:-L?(\d+))?$")  # the fragment of `2026-11-20.md#L3-L9`
_ITEM = re.compile(r"^[a-z]\d*-[0-9a-f]{1,32}$")  # the fragment of `items/semantic.jsonl#s-…`
_DRIVE = re.compile(r"^[A-Za-z]:")


class ItemPaths(Protocol):
    """Where an item lives (`ItemStore.path_of`): its id names its layer and, episodic, its
    day; None for an id of no known kind."""

    def path_of(self, scope: MemoryScope, item_id: str) -> Path | None: ...


@dataclass(frozen=True)
class Citation:
    """A memory path as the model gave it, checked: relative to `memory/`, POSIX form."""

    path: str  # "" for an item cited by its id alone (`s-1a2b3c4d5e`)
    start: int | None = None  # from `#L3`
    end: int | None = None  # from `-L9`
    item: str | None = None  # from `items/semantic.jsonl#s-1a2b3c4d5e`: the item's line


def parse_citation(raw: str) -> Citation:
    """The path and line range the model named, or `ToolError` saying why it is refused."""
    text = raw.strip()
    text = text.removeprefix("memory/")
    if text.startswith("sessions/"):
        raise ToolError(
            "that citation is a past conversation, not a file: its text is in the "
            "memory_search result"
        )
    if text.startswith("lightrag:"):
        raise ToolError(
            "that citation is from the LightRAG server, not a file: its text is in the "
            "memory_search result"
        )
    if text.startswith(("/", "\\", "~")) or _DRIVE.match(text):
        raise ToolError("absolute paths are refused: give a path relative to memory/")
    if "\\" in text:
        raise ToolError("use / between folders (a path relative to memory/)")
    path, *fragments = text.split("#")
    if _ITEM.match(path) and (not fragments or fragments == ["L1-L1"]):
        return Citation("", item=path)  # `# Relevant Memory`'s short form of an item
    parts = PurePosixPath(path).parts
    if ".." in parts:
        raise ToolError("'..' is refused: give a path inside memory/")
    if not parts:
        raise ToolError(PATH_HINT)
    return Citation("/".join(parts), *_fragments(fragments))


def _fragments(fragments: list[str]) -> tuple[int | None, int | None, str | None]:
    """`#L3-L9` → (3, 9, None); an item's `#s-…` (and the `#L1-L1` its hits carry) →
    (None, None, "s-…")."""
    if not fragments:
        return None, None, None
    first, rest = fragments[0], fragments[1:]
    lines = _RANGE.match(first)
    if lines and not rest:
        return int(lines[1]), int(lines[2]) if lines[2] else None, None
    if _ITEM.match(first) and (not rest or (len(rest) == 1 and _RANGE.match(rest[0]))):
        return None, None, first
    raise ToolError(PATH_HINT)


def readable(parts: Iterable[str], scope: MemoryScope, session_key: str) -> bool:
    """Whether a chat may read the memory file at these path parts (relative to `memory/`)."""
    parts = tuple(parts)
    if not parts:
        return False
    scopes = visible_scopes(scope, session_key)
    if parts[0] == "chats":
        folders = {encode_key(s.chat_key) for s in scopes if s.chat_key is not None}
        return len(parts) >= 3 and parts[1] in folders
    if parts[0] == "working":
        return parts == ("working", f"{encode_key(session_key)}.md")
    return any(s.is_global for s in scopes)


def resolve(memory_root: Path, relative: str, scope: MemoryScope, session_key: str) -> Path:
    """The file a checked relative path names; `ToolError` when it is not the chat's to read
    or leads out of its scope's folder."""
    if not readable(PurePosixPath(relative).parts, scope, session_key):
        raise ToolError("that file is not part of this chat's memory")
    path = memory_root / relative
    if not inside_scope(path, memory_root):
        raise ToolError("refused: that path leads outside its memory folder")
    return path


@dataclass(frozen=True)
class Slice:
    lines: tuple[tuple[int, str], ...]  # (number from 1, text)
    total: int  # lines in the file


def read_slice(path: Path, start: int, count: int, documents: Documents = ON_DISK) -> Slice | None:
    """Lines start..start+count-1 of a text file; None when there is no such file."""
    return read_lines(path, lambda number, _: start <= number < start + count, documents)


def read_item(path: Path, item_id: str, documents: Documents = ON_DISK) -> Slice | None:
    """The line of an item file that holds the item with this id."""
    needle = f'"{item_id}"'.encode()
    return read_lines(path, lambda _, raw: needle in raw, documents)


def read_lines(
    path: Path, pick: Callable[[int, bytes], bool], documents: Documents = ON_DISK
) -> Slice | None:
    """The picked lines (at most MAX_LINES) of a text file; None when there is no such file."""
    try:
        with documents.open(path) as handle:
            if decode_text(handle.read(SNIFF_BYTES)) is None:
                raise ToolError("refused: that file is not text")
            handle.seek(0)
            return _slice(handle, pick)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise ToolError("that is a folder, not a file") from exc
    except OSError as exc:
        raise ToolError("that file cannot be read") from exc


def _slice(handle: Iterable[bytes], pick: Callable[[int, bytes], bool]) -> Slice:
    picked: list[tuple[int, str]] = []
    total = 0
    for total, raw in enumerate(handle, start=1):
        if len(picked) < MAX_LINES and pick(total, raw):
            picked.append((total, _line(raw)))
    return Slice(tuple(picked), total)


def _line(raw: bytes) -> str:
    line = without_controls(raw.decode("utf-8", errors="replace")).rstrip("\r\n")
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "…"


def render_slice(relative: str, found: Slice | None) -> str:
    """`MEMORY.md lines 3-9 of 40` and the numbered lines (`3| text`)."""
    if found is None:
        return NO_SUCH_FILE
    if not found.lines:
        return f"(empty: {relative} has {found.total} lines)"
    first, last = found.lines[0][0], found.lines[-1][0]
    body = "\n".join(f"{number}| {text}" for number, text in found.lines)
    return f"{relative} lines {first}-{last} of {found.total}\n{body}"


@dataclass(eq=False)
class MemoryGet:
    spec = ToolSpec(
        name="memory_get",
        description=(
            "Read lines of one memory file, numbered. `path` is relative to memory/ (MEMORY.md, "
            "2026-11-20.md, chats/…/MEMORY.md) or a citation such as 2026-11-20.md#L3-L9 (from "
            "memory_search, or # Relevant Memory's; an item by its id). Read only the lines "
            "you need."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "A path relative to memory/, or a path#Lstart-Lend citation.",
                    "minLength": 1,
                    "maxLength": MAX_PATH_CHARS,
                },
                "from_line": {
                    "type": "integer",
                    "description": "The first line to read, from 1 (default 1, or the citation's).",
                    "minimum": 1,
                },
                "lines": {
                    "type": "integer",
                    "description": f"How many lines to read (default {DEFAULT_LINES}, or the "
                    f"citation's range; at most {MAX_LINES}).",
                    "minimum": 1,
                    "maximum": MAX_LINES,
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    )

    memory_root: Path
    documents: Documents = ON_DISK  # where the memory is kept (`Workspace.documents`)
    items: ItemPaths | None = None  # where an item cited by its id alone is (None: refused)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        arguments.only(args, ("path", "from_line", "lines"))
        citation = parse_citation(arguments.text(args, "path", max_chars=MAX_PATH_CHARS))
        start, count = window(args, citation)
        return await asyncio.to_thread(self._read, citation, start, count, ctx)

    def _read(self, citation: Citation, start: int, count: int, ctx: ToolContext) -> str:
        if not citation.path and citation.item:
            return self._item(citation.item, ctx)
        path = resolve(self.memory_root, citation.path, ctx.scope, ctx.session_key)
        if citation.item is None:
            found = read_slice(path, start, count, self.documents)
            _recalled(citation.path, found, ctx)
            return render_slice(citation.path, found)
        found = read_item(path, citation.item, self.documents)
        if found is not None and not found.lines:
            return f"(empty: no item {citation.item} in {citation.path})"
        return render_slice(citation.path, found)

    def _item(self, item_id: str, ctx: ToolContext) -> str:
        """The item with this id in the first of the chat's visible scopes that holds it."""
        items = self.items
        for scope in visible_scopes(ctx.scope, ctx.session_key) if items else ():
            path = items.path_of(scope, item_id) if items else None
            if path is None or not inside_scope(path, self.memory_root):
                continue
            found = read_item(path, item_id, self.documents)
            if found is not None and found.lines:
                return render_slice(path.relative_to(self.memory_root).as_posix(), found)
        return f"(empty: no item {item_id} in this chat's memory)"


def _recalled(relative: str, found: Slice | None, ctx: ToolContext) -> None:
    """Others' words the slice holds (a document's text, a quote …), noted for the turn's
    origin (`bot.memory.trust`)."""
    if found is None or not found.lines:
        return
    text = "\n".join(line for _, line in found.lines)
    at = ctx.origin.said.at if ctx.origin is not None else datetime.now(UTC)
    ctx.recalled.extend(in_file(relative, text, chat=ctx.session_key, at=at))


def window(args: arguments.Args, citation: Citation) -> tuple[int, int]:
    """The first line and how many: the arguments first, then the citation, then defaults."""
    start = arguments.integer(args, "from_line", default=citation.start or 1, low=1, high=10**9)
    span = DEFAULT_LINES
    if citation.start is not None and citation.end is not None:
        span = citation.end - citation.start + 1
    count = arguments.integer(args, "lines", default=span, low=1, high=MAX_LINES)
    return start, count
