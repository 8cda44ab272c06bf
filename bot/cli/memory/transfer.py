"""`python -m bot memory export DIR|FILE` and `memory import DIR|FILE [--force]`.

Export writes the workspace's memory as a bundle (`bot.memory.transfer`) with a fixed set of
searches and the first hit from memory each gets here: one per fact line of each MEMORY.md
and per active semantic item (at most `CHECKS`), each asked with its own words. Import checks
the bundle, writes the memory (refusing a memory that is not empty unless `--force`, which sets
it aside), rebuilds the index from the files and asks the same searches: it exits 1 and names
each one answered differently.

In replicated mode (`store.url`) the memory is the documents the replicas share: export reads
them and import writes them, the bundle the same as the embedded mode's, so a memory moves
between the modes. Its searches are left out there: the index is not built from the shared
documents yet. The bot's own state (`state/`: a group's chatter, the undo of /forget, the
consolidation jobs, the usage ledger) is not memory and is not exported in either mode; an
export made while consolidation jobs still wait says so, as their messages are not in the
memory yet.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

from bot.app import clock
from bot.app.store import stored_workspace
from bot.index import MemoryIndex
from bot.index.sources import scope_of
from bot.memory.lines import fact_of
from bot.memory.recall.sources import ItemsAndIndex
from bot.memory.transfer import (
    Bundle,
    BundleError,
    Check,
    Document,
    documents_of,
    import_documents,
    read_bundle,
    write_bundle,
)
from bot.settings import Settings
from bot.storage.workspace import Workspace

Print = Callable[[str], None]
OpenItemsIndex = Callable[[], ItemsAndIndex]
CHECKS = 40  # searches a bundle carries at most
PER_FILE = 5  # fact lines or items asked of one file
QUERY_WORDS = 12
K = 5


def run(
    settings: Settings,
    args: argparse.Namespace,
    items_index: Callable[[Workspace], ItemsAndIndex],
    out: Print,
) -> int:
    now = clock(settings.timezone)()
    with stored_workspace(settings) as workspace:
        searchable = settings.rag.enabled and settings.store.url is None
        index = (lambda: items_index(workspace)) if searchable else None
        try:
            if args.memory_command == "export":
                return export(workspace, index, args.target, now=now, out=out)
            return import_(workspace, index, args.source, force=args.force, now=now, out=out)
        except BundleError as exc:
            out(f"error: {exc}")
            return 1


def export(
    workspace: Workspace,
    items_index: OpenItemsIndex | None,  # None: no searches (recall off, or replicated mode)
    target: str,
    *,
    now: datetime,
    out: Print,
) -> int:
    documents = documents_of(workspace)
    checks: list[Check] = []
    if items_index is not None:
        index = items_index().index.open()
        try:
            checks = [_asked(index, scope, query, now) for scope, query in queries(documents)]
        finally:
            index.close()
    bundle = Bundle(now.isoformat(timespec="seconds"), tuple(documents), tuple(checks))
    write_bundle(bundle, Path(target))
    size = sum(len(d.data) for d in documents)
    out(f"exported {len(documents)} files ({size:,} bytes) and {len(checks)} searches to {target}")
    if waiting := len(workspace.documents.listing(workspace.consolidation_dir, "*.json")):
        out(
            f"note: {waiting} consolidation job(s) still wait to run: what they fold into "
            "memory is not in this export; run the bot until they are done, then export again"
        )
    return 0


def import_(
    workspace: Workspace,
    items_index: OpenItemsIndex | None,
    source: str,
    *,
    force: bool,
    now: datetime,
    out: Print,
) -> int:
    bundle = read_bundle(Path(source))
    workspace.ensure()
    aside = import_documents(workspace, list(bundle.documents), force=force, now=now)
    out(f"imported {len(bundle.documents)} files from {source}")
    if aside is not None:
        out(f"the memory that was here is kept in {aside}")
    if items_index is None or not bundle.checks:
        out("nothing to verify: the bundle carries no searches (or none are asked here)")
        return 0
    differ = verify(items_index().index.open(sync=False), bundle)
    for check, got in differ:
        where = check.scope or "global"
        was, now_is = check.first or "none", got or "none"
        out(f"differs ({where}): {check.query!r}: the source found {was}, this found {now_is}")
    asked = len(bundle.checks)
    verdict = "verified" if not differ else "NOT verified"
    out(f"{verdict}: {asked - len(differ)} of {asked} searches answer as in the source")
    return 0 if not differ else 1


def verify(index: MemoryIndex, bundle: Bundle) -> list[tuple[Check, str]]:
    """Rebuild `index` from the files, ask the bundle's searches (as of its export): each
    answered differently, with what it found here. Closes the index."""
    at = datetime.fromisoformat(bundle.exported_at) if bundle.exported_at else None
    try:
        index.rebuild()
        asked = ((check, _asked(index, check.scope, check.query, at)) for check in bundle.checks)
        return [(check, found.first) for check, found in asked if found.first != check.first]
    finally:
        index.close()


def queries(documents: Sequence[Document]) -> list[tuple[str, str]]:
    """(scope, words) of each fact line of each MEMORY.md and each active semantic item."""
    found: list[tuple[str, str]] = []
    for document in documents:
        name = document.path.rsplit("/", 1)[-1]
        if name == "MEMORY.md":
            texts = list(_fact_lines(document))
        elif document.path.endswith("items/semantic.jsonl"):
            texts = list(_item_texts(document))
        else:
            continue
        scope = scope_of(document.path)
        found += [(scope, " ".join(t.split()[:QUERY_WORDS])) for t in texts[:PER_FILE]]
    return found[:CHECKS]


def _fact_lines(document: Document) -> Iterator[str]:
    for line in document.data.decode("utf-8", errors="replace").splitlines():
        text = fact_of(line)
        if text is not None and len(text.split()) >= 3:
            yield text


def _item_texts(document: Document) -> Iterator[str]:
    for line in document.data.decode("utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("status", "active") == "active":
            text = str(item.get("text", ""))
            if len(text.split()) >= 3:
                yield text


def _asked(index: MemoryIndex, scope: str, query: str, at: datetime | None) -> Check:
    """The search and the citation of its first hit from memory (not a conversation's)."""
    hits = index.search(query, scopes=[scope], k=K, now=at)
    memory = [h for h in hits if not h.path.startswith("sessions/") and ":" not in h.path]
    return Check(scope, query, memory[0].citation if memory else "")
