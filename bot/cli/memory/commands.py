"""`python -m bot memory search | reindex | stats | export | import | edit`: the search index
and the items from a shell, the memory moved between workspaces (`bot.cli.memory.transfer`)
and one memory document edited with a version check (`bot.cli.memory.editing`).

They need the settings and the workspace only: no Telegram token, and a model key only when
the embedder is "openai". The index is opened as the bot opens it (a delta sync with the memory
files, the items put back if the index has none), so a search sees a hand edit made a moment
ago. A running bot follows the CLI's writes (the index notices another process's changes).

    search "text" [--k N] [--chat KEY]   what memory says, best first: where (the citation the
                                         bot's tools read), what kind, which day, and the
                                         matching lines; the owner's global memory by default,
                                         only that chat's with --chat. A hit that is only the
                                         question asked before (whatever was answered then)
                                         comes last; chats are named as people read their keys.
    reindex                              rebuild from the files: memory, sessions and items
    stats                                the index (chunks per kind, files, vectors), the items
                                         per scope and layer, the markdown files by kind
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bot.app import clock
from bot.app.store import stored_workspace
from bot.cli.memory import editing, transfer
from bot.index import Hit, MemoryIndex
from bot.index.sources import kind_of
from bot.index.sync import MarkdownSource, source_files
from bot.llm.tokens import TokenCounter
from bot.memory.recall.sources import ItemsAndIndex
from bot.models import GLOBAL_KEY, GLOBAL_SCOPE, MemoryLayer
from bot.settings import Settings
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace, decode_key

Print = Callable[[str], None]


def run(settings: Settings, args: argparse.Namespace, out: Print = print) -> int:
    if args.memory_command == "edit":
        return editing.run(settings, args.file, out)
    if args.memory_command in ("export", "import"):  # the index is built after an import
        return transfer.run(settings, args, lambda stored: _items_index(settings, stored), out)
    with stored_workspace(settings) as workspace:  # replicated: the shared documents
        return _index_command(settings, args, workspace, out)


def _index_command(
    settings: Settings, args: argparse.Namespace, workspace: Workspace, out: Print
) -> int:
    workspace.ensure()
    items_index = _items_index(settings, workspace)
    if args.memory_command == "reindex":
        return reindex(items_index, out)
    with _opened(items_index) as index:
        if args.memory_command == "search":
            k = args.k or settings.rag.search_k
            return search(index, args.query, k=k, chat=args.chat, out=out)
        return stats(items_index, workspace, index, out)


def _items_index(settings: Settings, workspace: Workspace) -> ItemsAndIndex:
    secret = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
    locks = FileLocks(workspace.locks_dir)
    now = clock(settings.timezone)
    return ItemsAndIndex.from_settings(
        settings, workspace, locks, TokenCounter().count, now, api_key=secret
    )


@contextmanager
def _opened(items_index: ItemsAndIndex) -> Iterator[MemoryIndex]:
    index = items_index.index.open()
    try:
        yield index
    finally:
        index.close()


_KINDS = {
    "memory": "long-term memory",
    "note": "daily note",
    "history": "history",
    "working": "working memory",
    "item": "remembered item",
    "exchange": "conversation",
}
_SHOWN_LINES = 6
_LINE_CHARS = 200
_WORD = re.compile(r"\w+")
_SPEAKERS = frozenset({"user", "assistant"})
# a message of the person: `User: …` (after a note line's `[HH:MM]`, before ` | Assistant:`),
# a group's with the speaker's name first
_USER_SIDE = re.compile(r"(?:^|\n)(?:\[\d\d:\d\d\] )?User: (?:[^:|\n]{1,40}: )?([^|\n]*)")
_KEYED = re.compile(r"(?<=^sessions/)[^#/]+|(?<=^chats/)[^/#]+")  # the encoded chat key
NOT_YOURS = "the memory of your own private chats is searched without --chat"


def search(index: MemoryIndex, query: str, *, k: int, chat: str | None, out: Print) -> int:
    scopes = [chat] if chat else [GLOBAL_KEY]
    hits = index.search(query, scopes=scopes, k=max(1, k))
    if not hits:
        out(f"no matches in {chat}'s memory ({NOT_YOURS})" if chat else "no matches")
    ordered = sorted(hits, key=lambda hit: _asks_again(hit.text, query))  # stable: rank kept
    for number, hit in enumerate(ordered, start=1):
        out(_hit(number, hit))
    return 0


def _hit(number: int, hit: Hit) -> str:
    """`1. MEMORY.md#L1-L2 · long-term memory · 2026-11-20` and the matching lines under it."""
    kind = _KINDS.get(hit.kind, hit.kind)
    lines = [line.strip() for line in hit.text.splitlines() if line.strip()]
    shown = [_cut(line) for line in lines[:_SHOWN_LINES]]
    if len(lines) > _SHOWN_LINES:
        shown.append("…")
    body = "".join(f"\n   {line}" for line in shown)
    return f"{number}. {readable(hit.citation)} · {kind} · {hit.at:%Y-%m-%d}{body}"


def _cut(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"


def readable(citation: str) -> str:
    """The citation with the chat in it as a person reads it: `sessions/telegram:1001#…`, not
    the file name's `telegram%3A1001`."""
    return _KEYED.sub(lambda found: decode_key(found.group(0)), citation)


def _asks_again(text: str, query: str) -> bool:
    """Whether the hit is only the question asked before: every message of the person in it
    (`User: …`, a group's `User: Ann: …`) says nothing but the question's words, whatever was
    answered then; a text without messages, when it says nothing else."""
    asked = set(_WORD.findall(query.lower()))
    sides = _USER_SIDE.findall(text)
    return all(_only(side, asked) for side in sides) if sides else _only(text, asked)


def _only(text: str, asked: set[str]) -> bool:
    said = {w for w in _WORD.findall(text.lower()) if not w.isdigit()} - _SPEAKERS
    return bool(said) and said <= asked


def reindex(items_index: ItemsAndIndex, out: Print) -> int:
    started = time.perf_counter()
    opened = items_index.index.open(sync=False)
    try:
        report = opened.rebuild()
        items = opened.stats().chunks.get("item", 0)
    finally:
        opened.close()
    seconds = time.perf_counter() - started
    skipped = f", {len(report.skipped)} skipped (not text)" if report.skipped else ""
    out(f"reindexed {len(report.indexed)} files{skipped} and {items} items in {seconds:.2f} s")
    return 0


def stats(items_index: ItemsAndIndex, workspace: Workspace, index: MemoryIndex, out: Print) -> int:
    found = index.stats()
    chunks = ", ".join(f"{kind} {n}" for kind, n in sorted(found.chunks.items())) or "none"
    out(f"index     {workspace.index_dir}  embedder: {found.embedder or 'none (keyword only)'}")
    out(f"chunks    {chunks}  ({sum(found.chunks.values())} in all)")
    out(f"files     {found.files} indexed, {found.vectors} vectors")
    for line in _item_lines(items_index, workspace):
        out(line)
    markdown = source_files([MarkdownSource(workspace.memory_root)])
    kinds = Counter(kind_of(path) for path in markdown)
    out("markdown  " + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"))
    return 0


def _item_lines(items_index: ItemsAndIndex, workspace: Workspace) -> Iterator[str]:
    """`items     global: episodic 3, semantic 1, procedural 0 (1 decayed, 2 forgotten)`"""
    for scope in [GLOBAL_SCOPE, *workspace.chat_scopes()]:
        layers = {layer: items_index.items.items(scope, layer) for layer in MemoryLayer}
        counts = ", ".join(f"{layer.value} {len(items)}" for layer, items in layers.items())
        status = Counter(
            i.status for items in layers.values() for i in items if i.status != "active"
        )
        extra = ", ".join(f"{n} {s}" for s, n in sorted(status.items()))
        name = scope.chat_key or "global"
        yield f"items     {name}: {counts}" + (f" ({extra})" if extra else "")
