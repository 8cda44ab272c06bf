"""A person's text file as the bot changes it: the one owner of the rule on encodings and line
endings. Every rewrite of a memory file people edit goes through here (or keeps bytes as they
are, like forgetting's line removal, and takes only `newline_of` from here).

- The bot changes a file's text only when it is UTF-8. A file in another encoding (Latin-1,
  say) is refused with `NotTextError`, whose message tells the person to save it as UTF-8;
  nothing in it is ever replaced by U+FFFD, nothing is lost. (Reading it for the prompt may
  still replace a stray byte: `bot.storage.lines`.) A byte-order mark stays.
- Its line endings stay: the text is handled with "\\n" and written back with the file's own
  ending, "\\r\\n" when most of its lines end so.
- A file that is not text at all (binary) is refused the same way, and so is one that leads
  out of its scope's folder (`OutOfScopeError`, `bot.storage.confined`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from bot.errors import NotTextError, OutOfScopeError
from bot.storage.confined import inside_scope
from bot.storage.files import ON_DISK, Documents
from bot.storage.lines import decode_text

CRLF = "\r\n"
LF = "\n"


@dataclass(frozen=True)
class TextFile:
    text: str  # the file's text with "\n" line endings ("" when it is missing)
    newline: str  # the ending its lines are written with: "\r\n" or "\n"
    digest: str  # sha256 of the file's bytes as read ("" when it is missing)

    def ending(self, text: str) -> str:
        """`text` ("\\n" line endings) with this file's line ending."""
        return text if self.newline == LF else _lf(text).replace(LF, self.newline)

    def encode(self, text: str) -> bytes:
        """`text` ("\\n" line endings) as this file's bytes: UTF-8, with its line ending."""
        return self.ending(text).encode("utf-8")


MISSING = TextFile(text="", newline=LF, digest="")


def text_to_change(path: Path, memory_root: Path, documents: Documents = ON_DISK) -> TextFile:
    """The file's text before the bot changes it; `MISSING` when there is no file.
    `NotTextError` (why, for the person) when the bot must leave it as it is."""
    if not inside_scope(path, memory_root):
        raise OutOfScopeError(f"{path.name} leads outside this chat's memory, so I left it alone.")
    data = documents.read(path)
    if data is None:
        return MISSING
    if decode_text(data) is None:
        raise NotTextError(
            f"{path.name} is not readable as text, so I left it alone. "
            "Fix or move it, then try again."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotTextError(
            f"{path.name} is not UTF-8 text, so I left it alone; "
            "save it as UTF-8 to let me edit it."
        ) from exc
    return TextFile(text=_lf(text), newline=newline_of(data), digest=digest_of(data))


def text_to_show(path: Path, memory_root: Path, documents: Documents = ON_DISK) -> TextFile:
    """The file's text for the model to read (a stray bad byte replaced); `MISSING` when
    there is no file, or it may not be read (out of its scope, unreadable)."""
    if not inside_scope(path, memory_root):
        return MISSING
    try:
        data = documents.read(path)
    except OSError:
        return MISSING
    if data is None:
        return MISSING
    text = data.decode("utf-8", errors="replace")
    return TextFile(text=_lf(text), newline=newline_of(data), digest=digest_of(data))


def read_shown(path: Path, documents: Documents = ON_DISK) -> str:
    """The document's text as read (a stray bad byte replaced, line endings as they are); ""
    when it is missing or unreadable."""
    try:
        data = documents.read(path)
    except OSError:
        return ""
    return "" if data is None else data.decode("utf-8", errors="replace")


def newline_of(data: bytes) -> str:
    """The file's line ending: "\\r\\n" when most of its lines end so, else "\\n"."""
    crlf = data.count(b"\r\n")
    return CRLF if crlf and crlf * 2 >= data.count(b"\n") else LF


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def lines_of(text: str) -> list[str]:
    """The text's lines, each with its ending (split after "\n" alone, unlike `splitlines`,
    so a stray "\r" or form feed inside a line stays in it)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _lf(text: str) -> str:
    return text.replace(CRLF, LF)
