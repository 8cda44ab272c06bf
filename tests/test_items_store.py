"""Item files: versioned JSONL lines that round-trip, per-scope folders, and lines that do not
parse kept verbatim through every rewrite."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.index import MemoryIndex
from bot.memory.items.format import VERSION, ItemFormatError, decode, encode
from bot.memory.items.indexing import ItemSource
from bot.memory.items.rules import fingerprint, new_item
from bot.memory.items.store import ItemStore
from bot.models import GLOBAL_SCOPE, MemoryItem, MemoryLayer, MemoryScope
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace

AT = datetime(2026, 2, 7, 14, 15, tzinfo=ZoneInfo("Europe/Berlin"))
GROUP = MemoryScope(chat_key="telegram:-100123")


def store(root: Path) -> ItemStore:
    return ItemStore(Workspace(root), FileLocks())


def item(layer: MemoryLayer, text: str, *, scope: MemoryScope = GLOBAL_SCOPE) -> MemoryItem:
    return new_item(layer, "fact", text, scope=scope, at=AT, confidence=0.7, salience=0.6)


async def append(items: ItemStore, one: MemoryItem) -> Path:
    path = items.home_path(one.memory_scope, one.layer, one.created_at.date())
    async with items.lock(one.memory_scope, one.layer):
        await asyncio.to_thread(items.append_locked, path, one)
    return path


def test_an_item_round_trips_through_its_line_with_every_field() -> None:
    original = replace(
        item(MemoryLayer.SEMANTIC, "Project uses Postgres 16"),
        tags=("db", "project"),
        references=("MEMORY.md#L12", "sessions/telegram%3A1#turn-abc"),
        last_used_at=AT,
        decayed_at=AT,
        status="decayed",
    )

    line = encode(original)

    assert "\n" not in line
    assert json.loads(line)["version"] == VERSION
    assert decode(line) == original
    assert decode(line).created_at.utcoffset() == AT.utcoffset()


@pytest.mark.parametrize(
    "line",
    [
        "{not json",
        "[1, 2]",
        '{"version": 2, "id": "s-1", "layer": "semantic", "type": "fact", "text": "x"}',
        '{"id": "s-1", "layer": "semantic", "type": "fact", "text": "x"}',
        '{"version": 1, "id": "s-1", "layer": "cosmic", "type": "fact", "text": "x",'
        ' "created_at": "2026-02-07T10:00:00", "updated_at": "2026-02-07T10:00:00"}',
        '{"version": 1, "id": "s-1", "layer": "semantic", "type": "fact", "text": "  ",'
        ' "created_at": "2026-02-07T10:00:00", "updated_at": "2026-02-07T10:00:00"}',
    ],
)
def test_a_line_that_is_not_a_current_item_is_refused(line: str) -> None:
    with pytest.raises(ItemFormatError):
        decode(line)


def test_a_hand_written_line_gets_its_fingerprint_from_the_text_and_utc_times() -> None:
    line = json.dumps(
        {
            "version": 1,
            "id": "s-hand",
            "layer": "semantic",
            "type": "fact",
            "text": "The cat is called  Miso",
            "fingerprint": "stale",
            "created_at": "2026-02-07T10:00:00",
            "updated_at": "2026-02-07T10:00:00",
        }
    )

    read = decode(line)

    assert read.fingerprint == fingerprint("the cat is called miso")
    assert read.created_at == datetime(2026, 2, 7, 10, tzinfo=UTC)
    assert (read.confidence, read.salience, read.status) == (0.5, 0.5, "active")


async def test_items_go_to_their_layer_file_under_their_scope_folder(tmp_path: Path) -> None:
    items = store(tmp_path)

    paths = [
        await append(items, item(MemoryLayer.EPISODIC, "went to the dentist")),
        await append(items, item(MemoryLayer.SEMANTIC, "likes tea")),
        await append(items, item(MemoryLayer.PROCEDURAL, "make test", scope=GROUP)),
    ]

    memory = tmp_path / "memory"
    assert paths == [
        memory / "items" / "episodic" / "2026-02-07.jsonl",
        memory / "items" / "semantic.jsonl",
        memory / "chats" / "telegram%3A-100123" / "items" / "procedural.jsonl",
    ]
    assert [i.text for i in items.items(GLOBAL_SCOPE, MemoryLayer.SEMANTIC)] == ["likes tea"]
    assert items.items(GROUP, MemoryLayer.SEMANTIC) == []
    assert paths[0].stat().st_mode & 0o777 == 0o600


async def test_an_id_names_the_file_that_holds_the_item(tmp_path: Path) -> None:
    items = store(tmp_path)
    episodic = item(MemoryLayer.EPISODIC, "went to the dentist")
    semantic = item(MemoryLayer.SEMANTIC, "likes tea")
    await append(items, episodic)
    await append(items, semantic)

    assert episodic.id.startswith("e20260207-")
    assert items.find(GLOBAL_SCOPE, episodic.id) == episodic
    assert items.find(GLOBAL_SCOPE, semantic.id) == semantic
    assert items.find(GROUP, semantic.id) is None
    assert items.find(GLOBAL_SCOPE, "nonsense") is None


async def test_a_corrupt_line_is_skipped_on_read_and_kept_verbatim_on_rewrite(
    tmp_path: Path,
) -> None:
    items = store(tmp_path)
    first, second = item(MemoryLayer.SEMANTIC, "likes tea"), item(MemoryLayer.SEMANTIC, "has a cat")
    path = await append(items, first)
    corrupt = '{"version": 1, "id": "s-broken", "text": "half a line'
    future = '{"version": 9, "id": "s-future", "text": "from a newer bot"}'
    with path.open("a") as handle:
        handle.write(f"{corrupt}\n{future}\n")
    await append(items, second)

    assert [i.text for i in items.items(GLOBAL_SCOPE, MemoryLayer.SEMANTIC)] == [
        "likes tea",
        "has a cat",
    ]
    change = {first.id: replace(first, salience=1)}
    async with items.lock(GLOBAL_SCOPE, MemoryLayer.SEMANTIC):
        changed = await asyncio.to_thread(items.rewrite_locked, path, GLOBAL_SCOPE, change)

    assert changed == 1
    lines = path.read_text().splitlines()
    assert lines[1:3] == [corrupt, future]
    assert decode(lines[0]).salience == 1
    assert decode(lines[3]) == second


async def test_an_append_after_a_hand_edit_without_a_final_newline_starts_a_new_line(
    tmp_path: Path,
) -> None:
    items = store(tmp_path)
    path = await append(items, item(MemoryLayer.SEMANTIC, "likes tea"))
    path.write_text(path.read_text().rstrip("\n"))

    await append(items, item(MemoryLayer.SEMANTIC, "has a cat"))

    assert [i.text for i in items.items(GLOBAL_SCOPE, MemoryLayer.SEMANTIC)] == [
        "likes tea",
        "has a cat",
    ]


async def test_the_folder_decides_the_scope_whatever_the_line_says(tmp_path: Path) -> None:
    items = store(tmp_path)
    path = Workspace(tmp_path).semantic_items_path(GROUP)
    path.parent.mkdir(parents=True)
    path.write_text(encode(item(MemoryLayer.SEMANTIC, "copied by hand")) + "\n")

    (read,) = items.items(GROUP, MemoryLayer.SEMANTIC)

    assert read.scope == "telegram:-100123"


async def test_a_hand_edit_is_read_fresh(tmp_path: Path) -> None:
    items = store(tmp_path)
    first = item(MemoryLayer.SEMANTIC, "likes tea")
    path = await append(items, first)
    assert items.find(GLOBAL_SCOPE, first.id) == first

    path.write_text(encode(replace(first, text="likes coffee, not tea")) + "\n")

    found = items.find(GLOBAL_SCOPE, first.id)
    assert found is not None and found.text == "likes coffee, not tea"


def test_episodic_files_can_be_read_from_a_day_on(tmp_path: Path) -> None:
    items = store(tmp_path)
    workspace = Workspace(tmp_path)
    for day in ("2026-01-01", "2026-02-01", "2026-02-07"):
        path = workspace.episodic_items_path(GLOBAL_SCOPE, date.fromisoformat(day))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    (path.parent / "notes.jsonl").write_text("")

    since = items.layer_paths(GLOBAL_SCOPE, MemoryLayer.EPISODIC, since=date(2026, 2, 1))

    assert [p.stem for p in since] == ["2026-02-01", "2026-02-07"]


# ----------------------------------------------------------------- reads that follow the file


async def test_an_appended_line_is_seen_and_the_lines_before_are_not_parsed_again(
    tmp_path: Path,
) -> None:
    items = store(tmp_path)
    path = await append(items, item(MemoryLayer.SEMANTIC, "likes tea"))
    (before,) = items.read(path, GLOBAL_SCOPE).items

    await append(items, item(MemoryLayer.SEMANTIC, "has a cat"))
    with path.open("a") as handle:  # a person appends a line too
        handle.write(encode(item(MemoryLayer.SEMANTIC, "plays the cello")) + "\n")

    first, *rest = items.read(path, GLOBAL_SCOPE).items
    assert first is before  # the line read before was not parsed again
    assert [i.text for i in rest] == ["has a cat", "plays the cello"]


async def test_a_hand_edit_in_the_middle_is_seen_though_the_file_also_grew(
    tmp_path: Path,
) -> None:
    items = store(tmp_path)
    path = Path()
    for n in range(6):
        path = await append(items, item(MemoryLayer.SEMANTIC, f"fact number {n}"))
    assert len(items.read(path, GLOBAL_SCOPE).items) == 6
    inode = path.stat().st_ino

    edited = path.read_text().replace("fact number 1", "fact number one, edited")
    path.write_text(edited + encode(item(MemoryLayer.SEMANTIC, "a new fact")) + "\n")

    assert path.stat().st_ino == inode  # edited in place, and longer: it looks like growth
    texts = [i.text for i in items.read(path, GLOBAL_SCOPE).items]
    assert texts[1] == "fact number one, edited"
    assert texts[-1] == "a new fact" and len(texts) == 7


async def test_a_file_rewritten_with_the_same_size_is_read_again(tmp_path: Path) -> None:
    items = store(tmp_path)
    path = await append(items, item(MemoryLayer.SEMANTIC, "likes tea"))
    assert items.read(path, GLOBAL_SCOPE).items[0].text == "likes tea"
    size, inode = path.stat().st_size, path.stat().st_ino

    path.write_text(path.read_text().replace("likes tea", "likes tee"))  # in place
    later = path.stat().st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(later, later))  # saved a second later, as a person would

    assert (path.stat().st_size, path.stat().st_ino) == (size, inode)
    assert items.read(path, GLOBAL_SCOPE).items[0].text == "likes tee"

    swapped = path.with_suffix(".new")  # and swapped in whole, as an editor may
    swapped.write_text(path.read_text().replace("likes tee", "likes tae"))
    os.replace(swapped, path)

    assert items.read(path, GLOBAL_SCOPE).items[0].text == "likes tae"


async def test_a_line_read_half_written_is_read_whole_once_it_is_complete(
    tmp_path: Path,
) -> None:
    items = store(tmp_path)
    path = await append(items, item(MemoryLayer.SEMANTIC, "likes tea"))
    line = encode(item(MemoryLayer.SEMANTIC, "has a cat")) + "\n"
    with path.open("a") as handle:
        handle.write(line[:40])
    assert len(items.read(path, GLOBAL_SCOPE).lines) == 2  # the half line, kept verbatim

    with path.open("a") as handle:
        handle.write(line[40:])

    read = items.read(path, GLOBAL_SCOPE)
    assert [i.text for i in read.items] == ["likes tea", "has a cat"]
    assert len(read.lines) == 2


async def test_a_text_with_a_unicode_line_separator_stays_one_item(tmp_path: Path) -> None:
    items = store(tmp_path)
    odd = item(MemoryLayer.SEMANTIC, "first\u2028second\x85third\u2029fourth")
    path = await append(items, odd)
    await append(items, item(MemoryLayer.SEMANTIC, "likes tea"))

    change = {odd.id: replace(odd, salience=0.9)}
    async with items.lock(GLOBAL_SCOPE, MemoryLayer.SEMANTIC):
        await asyncio.to_thread(items.rewrite_locked, path, GLOBAL_SCOPE, change)

    fresh = store(tmp_path).read(path, GLOBAL_SCOPE)
    assert [i.text for i in fresh.items] == [odd.text, "likes tea"]
    assert len(fresh.lines) == 2 and fresh.items[0].salience == 0.9


async def test_an_item_with_a_unicode_line_separator_is_indexed_whole(tmp_path: Path) -> None:
    items = store(tmp_path)
    odd = item(MemoryLayer.SEMANTIC, "the boat is moored\u2028at the northern jetty")
    await append(items, odd)
    memory = Workspace(tmp_path).memory_root
    index = MemoryIndex(memory, tmp_path / "index", readers=(ItemSource(memory),))
    try:
        index.sync_files()
        hits = index.search("northern jetty", scopes=[""], k=5)
    finally:
        index.close()

    assert [hit.text for hit in hits] == ["the boat is moored\u2028at the northern jetty"]
