"""`python -m bot memory search | reindex | stats`: the search index and the items, from a shell.

They need the settings and the workspace only: no Telegram token, and a model key only when
the embedder is "openai". The index is opened as the bot opens it (a delta sync with the memory
files, the items put back if the index has none), so a search sees a hand edit made a moment
ago. A running bot follows the CLI's writes (the index notices another process's changes).

    search "text" [--k N] [--chat KEY]   hits, best first, with citations and scores: the owner's
                                         global memory by default, only that chat's with --chat
    reindex                              rebuild from the files: memory, sessions and items
    stats                                the index (chunks per kind, files, vectors), the items
                                         per scope and layer, the markdown files by kind
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bot.app import clock
from bot.app.memory import ItemsAndIndex, build_items_and_index
from bot.index import Hit, MemoryIndex
from bot.index.sources import kind_of
from bot.index.sync import MarkdownSource, source_files
from bot.llm.tokens import TokenCounter
from bot.models import GLOBAL_KEY, GLOBAL_SCOPE, MemoryLayer
from bot.settings import Settings
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace

Print = Callable[[str], None]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    memory = sub.add_parser("memory", help="search, rebuild or describe the memory index")
    commands = memory.add_subparsers(dest="memory_command", required=True)
    search = commands.add_parser("search", help="search memory, as the bot's tools do")
    search.add_argument("query")
    search.add_argument("--k", type=int, default=None, help="hits to show (rag.search_k)")
    search.add_argument("--chat", default=None, help="a chat key: search only its memory")
    commands.add_parser("reindex", help="rebuild the index from the memory files and items")
    commands.add_parser("stats", help="what the index and the items hold")


def run(settings: Settings, args: argparse.Namespace, out: Print = print) -> int:
    workspace = Workspace(settings.workspace)
    workspace.ensure()
    recall = _recall(settings, workspace)
    if args.memory_command == "reindex":
        return reindex(recall, out)
    with _opened(recall) as index:
        if args.memory_command == "search":
            k = args.k or settings.rag.search_k
            return search(index, args.query, k=k, chat=args.chat, out=out)
        return stats(recall, workspace, index, out)


def _recall(settings: Settings, workspace: Workspace) -> ItemsAndIndex:
    secret = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
    locks = FileLocks(workspace.locks_dir)
    now = clock(settings.timezone)
    return build_items_and_index(
        settings, workspace, locks, TokenCounter().count, now, api_key=secret
    )


@contextmanager
def _opened(recall: ItemsAndIndex) -> Iterator[MemoryIndex]:
    index = recall.index.open()
    try:
        yield index
    finally:
        index.close()


def search(index: MemoryIndex, query: str, *, k: int, chat: str | None, out: Print) -> int:
    scopes = [chat] if chat else [GLOBAL_KEY]
    hits = index.search(query, scopes=scopes, k=max(1, k))
    if not hits:
        out("no matches")
    for number, hit in enumerate(hits, start=1):
        out(_hit(number, hit))
    return 0


def _hit(number: int, hit: Hit) -> str:
    text = " ".join(hit.text.split())
    head = f"{number}. {hit.citation}  score {hit.score:.4f}  {hit.kind}  {hit.at:%Y-%m-%d}"
    return f"{head}\n   {text}"


def reindex(recall: ItemsAndIndex, out: Print) -> int:
    started = time.perf_counter()
    opened = recall.index.open(sync=False)
    try:
        report = opened.rebuild()
        items = opened.stats().chunks.get("item", 0)
    finally:
        opened.close()
    seconds = time.perf_counter() - started
    skipped = f", {len(report.skipped)} skipped (not text)" if report.skipped else ""
    out(f"reindexed {len(report.indexed)} files{skipped} and {items} items in {seconds:.2f} s")
    return 0


def stats(recall: ItemsAndIndex, workspace: Workspace, index: MemoryIndex, out: Print) -> int:
    found = index.stats()
    chunks = ", ".join(f"{kind} {n}" for kind, n in sorted(found.chunks.items())) or "none"
    out(f"index     {workspace.index_dir}  embedder: {found.embedder or 'none (keyword only)'}")
    out(f"chunks    {chunks}  ({sum(found.chunks.values())} in all)")
    out(f"files     {found.files} indexed, {found.vectors} vectors")
    for line in _item_lines(recall, workspace):
        out(line)
    markdown = source_files([MarkdownSource(workspace.memory_root)])
    kinds = Counter(kind_of(path) for path in markdown)
    out("markdown  " + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"))
    return 0


def _item_lines(recall: ItemsAndIndex, workspace: Workspace) -> Iterator[str]:
    """`items     global: episodic 3, semantic 1, procedural 0 (1 decayed, 2 forgotten)`"""
    for scope in [GLOBAL_SCOPE, *workspace.chat_scopes()]:
        layers = {layer: recall.items.items(scope, layer) for layer in MemoryLayer}
        counts = ", ".join(f"{layer.value} {len(items)}" for layer, items in layers.items())
        status = Counter(
            i.status for items in layers.values() for i in items if i.status != "active"
        )
        extra = ", ".join(f"{n} {s}" for s, n in sorted(status.items()))
        name = scope.chat_key or "global"
        yield f"items     {name}: {counts}" + (f" ({extra})" if extra else "")
