"""Last-used marks: every read sees them at once, the file gets them in a batch (a flush, the
service's stop, any rewrite of that file), a rewrite never loses one, and a mark never brings
back an item that is gone."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.memory.forgetting import Forgetting
from bot.memory.items.keeper import ItemKeeper
from bot.memory.items.store import ItemStore
from bot.memory.items.usage import UsageSaver
from bot.models import GLOBAL_SCOPE, MemoryItem, MemoryLayer
from bot.storage.files import FileLocks
from bot.storage.undo import UndoStore
from bot.storage.workspace import Workspace
from tests.clock import Clock
from tests.fakes.openai_api import FakeOpenAI
from tests.harness import make_settings, started_app

START = datetime(2026, 2, 7, 12, 0, tzinfo=UTC)
SHOWN = START + timedelta(days=3)


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def writer(store: ItemStore, clock: Clock) -> ItemKeeper:
    return ItemKeeper(store, now=clock, promotion_min_confidence=None)


async def facts(writer: ItemKeeper, *texts: str) -> list[MemoryItem]:
    return [await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, text) for text in texts]


def on_disk(path: Path) -> dict[str, str | None]:
    """Each item id in the file and its last-used time as written."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {line["id"]: line["last_used_at"] for line in lines}


def last_used(store: ItemStore, items: Sequence[MemoryItem]) -> list[datetime | None]:
    found = [store.find(GLOBAL_SCOPE, item.id) for item in items]
    return [item.last_used_at if item else None for item in found]


def semantic_path(store: ItemStore) -> Path:
    return store.home_path(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, START.date())


async def test_a_mark_is_read_at_once_and_written_by_a_flush(
    store: ItemStore, writer: ItemKeeper
) -> None:
    (fact,) = await facts(writer, "Likes jasmine tea")
    path = semantic_path(store)
    before = path.read_bytes()

    assert await store.touch(GLOBAL_SCOPE, [fact], SHOWN) == 1

    assert last_used(store, [fact]) == [SHOWN]
    assert path.read_bytes() == before  # no rewrite for a mark
    assert await store.save_marks() == 1
    assert on_disk(path) == {fact.id: SHOWN.isoformat()}
    assert await store.save_marks() == 0  # nothing waits any more


async def test_the_latest_mark_wins_over_an_older_one_in_memory_or_on_disk(
    store: ItemStore, writer: ItemKeeper
) -> None:
    (fact,) = await facts(writer, "Likes jasmine tea")
    await store.touch(GLOBAL_SCOPE, [fact], SHOWN)
    await store.touch(GLOBAL_SCOPE, [fact], SHOWN - timedelta(hours=1))
    assert last_used(store, [fact]) == [SHOWN]

    await store.save_marks()
    await store.touch(GLOBAL_SCOPE, [fact], SHOWN - timedelta(days=1))

    assert last_used(store, [fact]) == [SHOWN]
    assert await store.save_marks() == 0
    assert on_disk(semantic_path(store)) == {fact.id: SHOWN.isoformat()}


async def test_the_service_writes_the_marks_when_it_stops(
    store: ItemStore, writer: ItemKeeper
) -> None:
    fact = (await facts(writer, "Likes jasmine tea"))[0]
    episode = await writer.add(GLOBAL_SCOPE, MemoryLayer.EPISODIC, "Went to the dentist")
    service = UsageSaver(store, every=timedelta(hours=1))
    await service.start()

    await store.touch(GLOBAL_SCOPE, [fact, episode], SHOWN)
    await service.stop()

    episodes = store.path_of(GLOBAL_SCOPE, episode.id)
    assert episodes is not None
    assert on_disk(semantic_path(store)) == {fact.id: SHOWN.isoformat()}
    assert on_disk(episodes) == {episode.id: SHOWN.isoformat()}


async def test_the_service_writes_the_marks_every_period(
    store: ItemStore, writer: ItemKeeper
) -> None:
    (fact,) = await facts(writer, "Likes jasmine tea")
    service = UsageSaver(store, every=timedelta(milliseconds=20))
    await service.start()
    try:
        await store.touch(GLOBAL_SCOPE, [fact], SHOWN)
        for _ in range(100):
            if on_disk(semantic_path(store))[fact.id] is not None:
                break
            await asyncio.sleep(0.02)
    finally:
        await service.stop()

    assert on_disk(semantic_path(store)) == {fact.id: SHOWN.isoformat()}


async def test_more_marks_than_the_store_keeps_are_written_at_once(
    tmp_path: Path, writer: ItemKeeper
) -> None:
    shown = await facts(writer, "Likes jasmine tea", "Has a cat", "Plays the cello")
    small = ItemStore(Workspace(tmp_path), FileLocks(), max_marks=2)

    await small.touch(GLOBAL_SCOPE, shown[:2], SHOWN)
    assert set(on_disk(semantic_path(small)).values()) == {None}
    await small.touch(GLOBAL_SCOPE, shown[2:], SHOWN)

    assert set(on_disk(semantic_path(small)).values()) == {SHOWN.isoformat()}


async def test_a_rewrite_of_the_file_writes_its_marks_and_decay_sees_them(
    store: ItemStore, writer: ItemKeeper, clock: Clock
) -> None:
    shown, idle = await facts(writer, "Likes jasmine tea", "Has a cat")
    await store.touch(GLOBAL_SCOPE, [shown], SHOWN)
    clock.at = START + timedelta(days=31)

    assert await writer.decay(GLOBAL_SCOPE) == 1  # the idle one; the shown one was used

    assert on_disk(semantic_path(store)) == {shown.id: SHOWN.isoformat(), idle.id: None}
    stored, lowered = (store.find(GLOBAL_SCOPE, i.id) for i in (shown, idle))
    assert stored is not None and stored.salience == shown.salience
    assert lowered is not None and lowered.salience < idle.salience


async def test_a_mark_made_while_its_file_is_rewritten_and_grows_is_read_and_written(
    store: ItemStore, writer: ItemKeeper
) -> None:
    many = [f"fact number {n} about the garden and the tomatoes" for n in range(500)]
    await writer.add_facts(GLOBAL_SCOPE, many, sources=["x"])
    shown, changed = store.items(GLOBAL_SCOPE, MemoryLayer.SEMANTIC)[:2]
    seen: list[tuple[datetime, datetime | None]] = []  # each mark, and what a read then saw
    done = threading.Event()

    def mark_and_read() -> None:  # another chat's turns, in another thread
        while not done.is_set():
            at = SHOWN + timedelta(seconds=len(seen))
            asyncio.run(store.touch(GLOBAL_SCOPE, [shown], at))
            seen.append((at, last_used(store, [shown])[0]))

    marking = threading.Thread(target=mark_and_read)
    marking.start()
    try:
        n = 0  # each round rewrites the file that holds `shown`, then appends to it
        while n < 20 or (len(seen) <= 20 and n < 400):  # a loaded machine starves the thread
            await writer.update(GLOBAL_SCOPE, changed.id, salience=0.5 + (n % 50) / 100)
            await facts(writer, *(f"fact {n}.{m} about the shed" for m in range(5)))
            n += 1
    finally:
        done.set()
        marking.join()
    await store.save_marks()

    assert len(seen) > 20
    assert [(at, at) for at, _ in seen] == seen
    assert on_disk(semantic_path(store))[shown.id] == seen[-1][0].isoformat()


async def test_a_forget_keeps_the_other_marks_and_no_mark_brings_a_line_back(
    tmp_path: Path, store: ItemStore, writer: ItemKeeper
) -> None:
    kept, gone = await facts(writer, "Likes jasmine tea", "The door code is 4711")
    await store.touch(GLOBAL_SCOPE, [kept, gone], SHOWN)
    workspace = Workspace(tmp_path)
    undo = UndoStore(workspace.undo_dir, keep=timedelta(minutes=5), now=lambda: SHOWN)

    await Forgetting(workspace, store.locks, undo).forget(GLOBAL_SCOPE, "telegram:1", "4711")

    assert last_used(store, [kept, gone]) == [SHOWN, None]
    assert await store.save_marks() == 1
    assert on_disk(semantic_path(store)) == {kept.id: SHOWN.isoformat()}


async def test_a_mark_whose_item_is_gone_is_dropped_and_nothing_is_written(
    store: ItemStore, writer: ItemKeeper
) -> None:
    (fact,) = await facts(writer, "Likes jasmine tea")
    await store.touch(GLOBAL_SCOPE, [fact], SHOWN)
    path = semantic_path(store)
    path.write_text("")  # a person empties the file

    assert await store.save_marks() == 1
    assert path.read_text() == ""
    assert await store.save_marks() == 0


async def test_the_app_writes_the_marks_waiting_when_it_stops(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    async with started_app(make_settings(workspace, telegram=None, openai=fake_openai)) as app:
        assert app.items_index is not None
        fact = await app.items_index.item_keeper.add(
            GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Likes tea"
        )
        await app.items_index.items.touch(GLOBAL_SCOPE, [fact], SHOWN)
        path = app.items_index.items.path_of(GLOBAL_SCOPE, fact.id)
        assert path is not None and on_disk(path) == {fact.id: None}

    assert on_disk(path) == {fact.id: SHOWN.isoformat()}
