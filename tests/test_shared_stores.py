"""The items, the documents' text, the reminders (with the time zones and the tasks' tokens)
and the receipts over both kinds of workspace: one folder on this disk (two stores on it stand
for two processes), and two replicas, each its own folder, sharing a database
(`SplitDocuments` over `PgDocuments`, with `PgLocks`; skipped without `MNEMO_TEST_PG`). What
one writes the other reads, no cache of either serves a version the other has changed since,
and two changes made at once are both kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.index import MemoryIndex
from bot.media.document import save_text
from bot.media.extraction import Extracted, extract
from bot.media.files import MB, LocalFiles, MessageFiles
from bot.memory.items.indexing import ItemSource
from bot.memory.items.rules import new_item
from bot.memory.items.store import ItemStore
from bot.models import GLOBAL_SCOPE, Attachment, Inbound, MemoryItem, MemoryLayer, MemoryScope
from bot.receipts.store import ReceiptStore
from bot.reminders.model import Reminder
from bot.reminders.store import ReminderStore
from bot.reminders.tasks import DailySpend
from bot.reminders.zones import Zones
from bot.storage.files import Documents, FileDocuments, FileLocks, Locks, Signature
from bot.storage.workspace import Workspace
from bot.tools.memory_get import MemoryGet
from bot.tools.registry import ToolContext
from tests.harness import OWNER
from tests.pg import pg_database
from tests.reminding import a_reminder

NOW = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)
GROUP = MemoryScope(chat_key="telegram:-100123")
SEMANTIC = MemoryLayer.SEMANTIC


@dataclass
class Replica:
    workspace: Workspace
    locks: Locks


@pytest.fixture(params=["files", "replicas"])
async def two(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[Replica]]:
    if request.param == "files":
        root = tmp_path / "ws"
        yield [Replica(Workspace(root), FileLocks(root / "state" / "locks")) for _ in "ab"]
        return
    from bot.replicas.database import open_pool
    from bot.replicas.documents import open_documents
    from bot.replicas.locks import PgLocks
    from bot.replicas.shared_documents import SplitDocuments

    async with pg_database() as url, AsyncExitStack() as stack:
        held: list[Replica] = []
        for name in ("a", "b"):  # each replica its own folder, pools and caches
            root = tmp_path / name
            documents = open_documents(url, root)
            documents.connect()
            stack.callback(documents.close)
            pool = open_pool(url)
            await pool.open()
            stack.push_async_callback(pool.close)
            split = SplitDocuments(documents, FileDocuments(), root)
            held.append(Replica(Workspace(root, split), PgLocks(pool, root=root)))
        yield held


# ---------------------------------------------------------------------- items


def items_of(replica: Replica) -> ItemStore:
    return ItemStore(replica.workspace, replica.locks)


def fact(text: str, *, at: datetime = NOW, layer: MemoryLayer = SEMANTIC) -> MemoryItem:
    return new_item(layer, "fact", text, scope=GROUP, at=at, confidence=0.7, salience=0.6)


async def append(store: ItemStore, item: MemoryItem) -> Path:
    path = store.home_path(GROUP, item.layer, item.created_at.date())
    async with store.lock(GROUP, item.layer):
        await asyncio.to_thread(store.append_locked, path, item)
    return path


async def change(store: ItemStore, item_id: str, edit: Callable[[MemoryItem], MemoryItem]) -> None:
    """Rewrite one item, as the keeper does: read it and write it under the layer's lock."""
    async with store.lock(GROUP, SEMANTIC):
        found = await asyncio.to_thread(store.find, GROUP, item_id)
        assert found is not None
        path = store.home_path(GROUP, SEMANTIC, date.min)
        await asyncio.to_thread(store.rewrite_locked, path, GROUP, {item_id: edit(found)})


def texts(store: ItemStore, layer: MemoryLayer = SEMANTIC) -> list[str]:
    return [item.text for item in store.items(GROUP, layer)]


async def test_an_item_one_writes_the_other_reads_and_its_change_is_seen(
    two: list[Replica],
) -> None:
    first, second = (items_of(r) for r in two)
    tea = fact("Ann drinks tea")
    await append(first, tea)
    assert texts(second) == ["Ann drinks tea"]
    await append(second, fact("Ann has a cat"))
    assert texts(first) == ["Ann drinks tea", "Ann has a cat"]  # the grown file, read on
    await change(second, tea.id, lambda i: replace(i, text="Ann drinks green tea"))
    assert texts(first) == ["Ann drinks green tea", "Ann has a cat"]  # rewritten: read again


async def test_an_episodic_file_one_makes_is_listed_by_the_other(two: list[Replica]) -> None:
    first, second = (items_of(r) for r in two)
    episodic = MemoryLayer.EPISODIC
    await append(first, fact("we met", at=NOW - timedelta(days=1), layer=episodic))
    assert texts(second, episodic) == ["we met"]  # the folder's listing, kept by the second
    await append(first, fact("we talked", layer=episodic))
    assert texts(second, episodic) == ["we met", "we talked"]
    assert [p.name for p in second.layer_paths(GROUP, episodic)] == [
        "2026-11-26.jsonl",
        "2026-11-27.jsonl",
    ]


async def test_items_two_replicas_change_at_once_are_both_kept(two: list[Replica]) -> None:
    first, second = (items_of(r) for r in two)
    made = [fact(f"fact {n}") for n in range(6)]
    for item in made:
        await append(first, item)
    assert len(texts(second)) == 6  # both have the file parsed, in their caches
    await asyncio.gather(
        *(change(first, item.id, lambda i: replace(i, salience=0.9)) for item in made[:3]),
        *(change(second, item.id, lambda i: replace(i, salience=0.1)) for item in made[3:]),
    )
    for store in (first, second):
        assert [i.salience for i in store.items(GROUP, SEMANTIC)] == [0.9] * 3 + [0.1] * 3


async def test_a_last_used_mark_is_written_over_the_other_replica_s_change(
    two: list[Replica],
) -> None:
    first, second = (items_of(r) for r in two)
    tea, cat = fact("Ann drinks tea"), fact("Ann has a cat")
    await append(first, tea)
    await append(first, cat)
    assert await first.touch(GROUP, first.items(GROUP, SEMANTIC)[:1], NOW) == 1
    await change(second, cat.id, lambda i: replace(i, text="Ann has two cats"))
    assert await first.save_marks() == 1
    [used, cats] = second.items(GROUP, SEMANTIC)
    assert (used.last_used_at, cats.text) == (NOW, "Ann has two cats")


async def test_an_item_appended_after_a_hand_edit_starts_its_own_line(
    two: list[Replica],
) -> None:
    first, second = (items_of(r) for r in two)
    path = await append(first, fact("Ann drinks tea"))
    documents = two[0].workspace.documents
    documents.write(path, (documents.read(path) or b"") + b"my own note, no newline")
    await append(second, fact("Ann has a cat"))
    data = documents.read(path) or b""
    assert data.count(b"\n") == 3 and b"no newline\n{" in data
    assert texts(first) == ["Ann drinks tea", "Ann has a cat"]


async def test_the_other_replica_s_index_finds_an_item_one_wrote(
    two: list[Replica], tmp_path: Path
) -> None:
    first, second = two
    await append(items_of(first), fact("The kayak is moored at the northern jetty"))
    memory = second.workspace.memory_root
    index = MemoryIndex(
        memory,
        tmp_path / "index-of-the-second",
        readers=(ItemSource(memory),),
        documents=second.workspace.documents,
    )
    try:
        index.sync_files()
        [hit] = index.search("northern jetty", scopes=[GROUP.chat_key or ""], k=1, now=NOW)
    finally:
        index.close()
    assert hit.path.startswith("chats/telegram%3A-100123/items/semantic.jsonl#s-")


async def test_memory_get_reads_an_item_the_other_replica_wrote(two: list[Replica]) -> None:
    first, second = two
    tea = fact("Ann drinks tea")
    await append(items_of(first), tea)
    tool = MemoryGet(second.workspace.memory_root, second.workspace.documents)
    context = ToolContext(session_key=GROUP.chat_key or "", scope=GROUP)
    cited = f"chats/telegram%3A-100123/items/semantic.jsonl#{tea.id}"
    said = await tool.run({"path": cited}, context)
    assert said.startswith("chats/telegram%3A-100123/items/semantic.jsonl lines 1-1 of 1")
    assert "Ann drinks tea" in said


class EditedMeanwhile:
    """A workspace's documents where a person edits `path` (appends `line`: a person takes no
    lock) right before the bot's first version-checked write of it."""

    def __init__(self, documents: Documents, path: Path, line: bytes) -> None:
        self.documents = documents
        self.path = path
        self.line = line

    def write_if(self, path: Path, data: bytes, expected: Signature | None) -> bool:
        if path == self.path and self.line:
            self.documents.append(path, self.line)
            self.line = b""
        return self.documents.write_if(path, data, expected)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.documents, name)


async def test_a_person_s_edit_made_during_a_rewrite_is_kept(two: list[Replica]) -> None:
    replica = two[0]
    tea = fact("Ann drinks tea")
    path = await append(items_of(replica), tea)
    edited = EditedMeanwhile(replica.workspace.documents, path, b"my own line\n")
    workspace = Workspace(replica.workspace.root, edited)
    await change(ItemStore(workspace, replica.locks), tea.id, lambda i: replace(i, salience=0.9))
    data = replica.workspace.documents.read(path) or b""
    assert data.endswith(b"\nmy own line\n") and b'"salience":0.9' in data
    reminders = workspace.reminders_path(GROUP)
    edited.path, edited.line = reminders, b"a line of my own\n"
    await ReminderStore(workspace, replica.locks).add(GROUP, reminder("r1", GROUP))
    kept = (replica.workspace.documents.read(reminders) or b"").splitlines()
    assert kept[-1] == b"a line of my own" and b'"id": "r1"' in kept[0]


# ---------------------------------------------------------------------- documents' text


async def test_a_document_s_text_one_replica_saved_is_the_other_s_and_written_once(
    two: list[Replica], tmp_path: Path
) -> None:
    sent = tmp_path / "list.txt"
    sent.write_bytes(b"oat milk\nrye bread\n")
    inbound = Inbound("telegram:update:7", "telegram", -100123, 1001, "", NOW, "group", None, 7)
    attachment = Attachment("document", str(sent), "list.txt", "text/plain")
    first, second = (
        MessageFiles(inbound, GROUP, fetcher=LocalFiles(), workspace=r.workspace, max_bytes=MB)
        for r in two
    )
    kept = await first.keep(attachment)
    saved = save_text(kept, "list.txt", extract(kept.data, "text"), two[0].workspace.documents)
    theirs = two[1].workspace
    [listed] = theirs.documents.listing(theirs.media_dir(GROUP), "*.md")
    assert listed.name == saved.name == f"{kept.path.name}.md"
    text = theirs.documents.read(listed) or b""
    assert text.endswith(
        b"kept as files/" + kept.path.name.encode() + b"; its text:\n\noat milk\nrye bread\n"
    )
    again = await second.keep(attachment)  # the message answered again, by the other
    found = Extracted("oat milk, edited\n")
    assert save_text(again, "list.txt", found, theirs.documents).name == listed.name
    assert theirs.documents.read(listed) == text  # kept as it was: written once


# ---------------------------------------------------------------------- reminders


def reminder(item_id: str, scope: MemoryScope, text: str = "water the plants") -> Reminder:
    chat_id = int(scope.chat_key.split(":")[1]) if scope.chat_key else OWNER
    return a_reminder(NOW, item_id=item_id, chat_id=chat_id, text=text)


async def test_a_reminder_one_adds_is_listed_and_removed_by_the_other(
    two: list[Replica],
) -> None:
    first, second = (ReminderStore(r.workspace, r.locks) for r in two)
    assert await second.everything() == []
    await first.add(GROUP, reminder("r1", GROUP))
    await first.add(GLOBAL_SCOPE, reminder("r2", GLOBAL_SCOPE))
    listed = await second.everything()
    assert [(scope, item.id) for scope, item in listed] == [(GLOBAL_SCOPE, "r2"), (GROUP, "r1")]
    assert await second.remove(GROUP, "r1") is not None
    assert [item.id for _, item in await first.everything()] == ["r2"]  # read again
    assert await first.find("r1") is None


async def test_reminders_two_replicas_add_at_once_are_all_kept(two: list[Replica]) -> None:
    stores = [ReminderStore(r.workspace, r.locks) for r in two]
    await asyncio.gather(*(stores[n % 2].add(GROUP, reminder(f"r{n}", GROUP)) for n in range(8)))
    for store in stores:
        assert sorted(item.id for item in await store.items(GROUP)) == [f"r{n}" for n in range(8)]


async def test_a_time_zone_and_the_tasks_tokens_are_the_cluster_s(two: list[Replica]) -> None:
    first, second = (
        Zones(r.workspace.timezones_path, r.locks, default="UTC", documents=r.workspace.documents)
        for r in two
    )
    await first.set(1001, "Europe/Lisbon")
    assert await second.of(1001) == "Europe/Lisbon"
    spends = [
        DailySpend(r.workspace.task_tokens_path, lambda: NOW, r.locks, r.workspace.documents)
        for r in two
    ]
    await asyncio.gather(*(spends[n % 2].add(100) for n in range(8)))
    assert await spends[0].today() == await spends[1].today() == 800
    assert await spends[1].first_telling("r1")
    assert not await spends[0].first_telling("r1")  # told once, whichever replica asks


# ---------------------------------------------------------------------- receipts


def receipts_of(replica: Replica) -> ReceiptStore:
    workspace = replica.workspace
    return ReceiptStore(
        workspace.receipts_path, replica.locks, now=lambda: NOW, documents=workspace.documents
    )


async def test_a_receipt_one_writes_the_other_finds_and_both_changes_are_kept(
    two: list[Replica],
) -> None:
    first, second = (receipts_of(r) for r in two)
    made = await first.add("telegram:1001", 1001, GLOBAL_SCOPE, "Likes tea", "in-1")
    found = await second.get(made)
    assert found is not None and found.text == "Likes tea"
    await asyncio.gather(
        second.mark_shown(found),
        first.await_edit("telegram:1001", 1001, made),
        *(first.add("telegram:1001", 1001, GLOBAL_SCOPE, f"fact {n}", "in-2") for n in range(4)),
    )
    assert await first.unshown("in-1") == []
    assert await second.editing("telegram:1001", 1001) == made
    assert len(await second.unshown("in-2")) == 4
