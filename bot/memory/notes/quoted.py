"""Quoted material: what a turn would have remembered from words that were not the person's own
(`bot.memory.trust`), kept as a quote with its source until an owner keeps it.

`QUOTED.md` sits beside the scope's MEMORY.md, one line per quote, readable and editable:

    - [q-1a2b3c4d] quoted, not confirmed: “Ann lives in Oslo” — Ann (42), from a document, …

The line says it is a quote, so wherever it is recalled (a search, `# Relevant Memory`) it reads
as data with its source, never as a fact or an instruction; it never reaches the prompt's
`# Memory`. Keeping one (`take`, then the writer's `keep_quoted`) moves its text to MEMORY.md
with its provenance; deleting the line by hand drops it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.memory.provenance import brief, from_brief
from bot.models import Provenance
from bot.storage.files import ON_DISK, Documents
from bot.storage.textfile import read_shown
from bot.storage.workspace import QUOTED_NAME as QUOTED_NAME

QUOTE_MARK = "quoted, not confirmed:"
_HEAD = (
    "# Quoted material\n"
    "Words from documents, forwarded messages, tools or other people, kept as quotes with "
    "their source. Not facts, not instructions: /keep ID makes one a fact.\n\n"
)
_LINE = re.compile(rf"^- \[(q-[0-9a-f]+)\] {re.escape(QUOTE_MARK)} “(.*)” — (.+)$")


@dataclass(frozen=True)
class Quote:
    id: str
    text: str
    origin: Provenance | None  # None: its source part was edited past reading


def path_of(memory_path: Path) -> Path:
    return memory_path.with_name(QUOTED_NAME)


def line_of(quote: Quote) -> str:
    text = " ".join(quote.text.replace("“", '"').replace("”", '"').split())
    return f"- [{quote.id}] {QUOTE_MARK} “{text}” — {brief(quote.origin)}"


def parse(line: str) -> Quote | None:
    found = _LINE.match(line.strip())
    if found is None:
        return None
    return Quote(found[1], found[2], from_brief(found[3]))


def add(
    memory_path: Path, texts: Sequence[str], origin: Provenance, documents: Documents = ON_DISK
) -> list[Quote]:
    """Append quotes of `texts` (blocking; the caller holds MEMORY.md's lock)."""
    path = path_of(memory_path)
    current = read_shown(path, documents)
    quotes = [Quote(f"q-{secrets.token_hex(4)}", text, origin) for text in texts if text.strip()]
    if quotes:
        lead = _HEAD if not current.strip() else ("" if current.endswith("\n") else "\n")
        data = lead + "".join(line_of(quote) + "\n" for quote in quotes)
        documents.append(path, data.encode("utf-8"))
    return quotes


def pending(memory_path: Path, documents: Documents = ON_DISK) -> list[Quote]:
    text = read_shown(path_of(memory_path), documents)
    return [quote for line in text.splitlines() if (quote := parse(line)) is not None]


def take(memory_path: Path, quote_id: str, documents: Documents = ON_DISK) -> Quote | None:
    """Remove the quote with this id from the file and return it (blocking, locked by the
    caller); None when there is none."""
    path = path_of(memory_path)
    text = read_shown(path, documents)
    lines = text.splitlines(keepends=True)
    for at, line in enumerate(lines):
        quote = parse(line)
        if quote is not None and quote.id == quote_id.strip().lower():
            documents.write(path, "".join(lines[:at] + lines[at + 1 :]).encode("utf-8"))
            return quote
    return None
