"""The item keeper: dedup by fingerprint, promotion to semantic memory, decay that never deletes,
and the tool operations (add, update, promote, forget)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.memory.items.format import decode
from bot.memory.items.keeper import ItemKeeper
from bot.memory.items.store import ItemStore
from bot.memory.items.turn import TurnMemoryEvent
from bot.models import GLOBAL_SCOPE, MemoryItem, MemoryLayer, MemoryScope
from tests.clock import Clock

START = datetime(2026, 2, 7, 14, 15, tzinfo=ZoneInfo("Europe/Berlin"))
GROUP = MemoryScope(chat_key="telegram:-100123")


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def writer(store: ItemStore, clock: Clock) -> ItemKeeper:
    return ItemKeeper(store, now=clock)


def turn(user: str, reply: str = "Noted.", *, at: datetime = START, n: int = 1) -> TurnMemoryEvent:
    return TurnMemoryEvent(GLOBAL_SCOPE, "telegram:42", f"t{n}", user, reply, at)


def on_disk(store: ItemStore, layer: MemoryLayer, scope: MemoryScope = GLOBAL_SCOPE) -> list[str]:
    """The raw lines of the layer's files: what a person would see."""
    paths = store.layer_paths(scope, layer)
    return [line for p in paths if p.exists() for line in p.read_text().splitlines()]


def jsonl_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.jsonl"))


def read(store: ItemStore, layer: MemoryLayer) -> list[MemoryItem]:
    return [decode(line) for line in on_disk(store, layer)]


async def test_a_turn_becomes_an_episodic_item_that_references_the_turn(
    writer: ItemKeeper, store: ItemStore
) -> None:
    event = TurnMemoryEvent(
        GLOBAL_SCOPE, "telegram:42", "abc", "What is the\nweather?", "Sunny.", START, ("clock",)
    )

    written = await writer.keep_turn(event)

    (item,) = read(store, MemoryLayer.EPISODIC)
    assert written == [item]
    assert (item.layer, item.type) == (MemoryLayer.EPISODIC, "turn")
    assert item.text == "User: What is the weather? | Assistant: Sunny."
    assert item.references == ("sessions/telegram%3A42#turn-abc",)
    assert item.tags == ("tool:clock",)
    assert item.created_at == START


async def test_the_same_fact_in_other_case_and_spacing_reinforces_the_first(
    writer: ItemKeeper, store: ItemStore, clock: Clock
) -> None:
    await writer.add_facts(GLOBAL_SCOPE, ["User lives in Berlin."], sources=["tag:memory"])
    clock.at = START + timedelta(hours=3)

    (again,) = await writer.add_facts(
        GLOBAL_SCOPE, ["  user LIVES in   berlin "], sources=["consolidation"]
    )

    (stored,) = read(store, MemoryLayer.SEMANTIC)
    assert stored == again
    assert stored.text == "User lives in Berlin."  # the first wording stays
    assert stored.confidence == pytest.approx(1 - 0.3 * 0.3)
    assert stored.salience == pytest.approx(0.8)
    assert stored.references == ("tag:memory", "consolidation")
    assert (stored.created_at, stored.updated_at) == (START, clock.at)


async def test_the_same_text_in_another_layer_or_scope_is_another_item(
    writer: ItemKeeper, store: ItemStore
) -> None:
    await writer.add_facts(GLOBAL_SCOPE, ["Uses vim"], sources=["tag:memory"])
    await writer.add(GLOBAL_SCOPE, MemoryLayer.PROCEDURAL, "uses vim", type="command")
    await writer.add_facts(GROUP, ["Uses vim"], sources=["tag:memory"])

    assert len(on_disk(store, MemoryLayer.SEMANTIC)) == 1
    assert len(on_disk(store, MemoryLayer.PROCEDURAL)) == 1
    assert len(on_disk(store, MemoryLayer.SEMANTIC, GROUP)) == 1


async def test_facts_are_typed_by_what_they_say(writer: ItemKeeper) -> None:
    facts = ["User prefers short answers", "Never deploy on Fridays", "The NAS is at 10.0.0.5"]

    written = await writer.add_facts(GLOBAL_SCOPE, facts, sources=["tag:memory"])

    assert [i.type for i in written] == ["preference", "constraint", "fact"]
    assert {i.layer for i in written} == {MemoryLayer.SEMANTIC}


async def test_a_statement_said_twice_reaches_075_and_is_promoted(
    writer: ItemKeeper, store: ItemStore, clock: Clock
) -> None:
    await writer.keep_turn(turn("I prefer green tea in the morning."))
    assert on_disk(store, MemoryLayer.SEMANTIC) == []  # 0.5: not yet
    clock.at = START + timedelta(days=1)

    await writer.keep_turn(turn("i prefer green tea in the morning", at=clock.at, n=2))

    episodic = [i for i in read(store, MemoryLayer.EPISODIC) if i.type == "preference"]
    (semantic,) = read(store, MemoryLayer.SEMANTIC)
    assert [i.confidence for i in episodic] == [0.75]
    assert semantic.text == "I prefer green tea in the morning."
    assert semantic.type == "preference"
    assert f"item:{episodic[0].id}" in semantic.references
    assert episodic[0].status == "active"  # the episodic item stays


async def test_below_the_threshold_nothing_is_promoted(store: ItemStore, clock: Clock) -> None:
    writer = ItemKeeper(store, now=clock, promotion_min_confidence=0.8)

    await writer.keep_turn(turn("I prefer green tea."))
    await writer.keep_turn(turn("I prefer green tea.", n=2))

    assert [i.confidence for i in read(store, MemoryLayer.EPISODIC) if i.type != "turn"] == [0.75]
    assert on_disk(store, MemoryLayer.SEMANTIC) == []


async def test_an_explicit_remember_is_promoted_at_once_and_turns_never_are(
    writer: ItemKeeper, store: ItemStore
) -> None:
    for n in range(3):
        await writer.keep_turn(turn("hello there friend", "Hi!", n=n))
    await writer.keep_turn(turn("Remember that the boiler code is 4711.", n=9))

    (semantic,) = read(store, MemoryLayer.SEMANTIC)
    assert semantic.text == "Remember that the boiler code is 4711."
    turns = [i for i in read(store, MemoryLayer.EPISODIC) if i.type == "turn"]
    assert max(i.confidence for i in turns) > 0.75  # repeated, yet an event is not a fact


async def test_promotion_can_be_switched_off(store: ItemStore, clock: Clock) -> None:
    writer = ItemKeeper(store, now=clock, promotion_min_confidence=None)

    await writer.keep_turn(turn("Remember that the boiler code is 4711."))

    assert on_disk(store, MemoryLayer.SEMANTIC) == []


async def test_decay_halves_idle_items_and_never_deletes_them(
    writer: ItemKeeper, store: ItemStore, clock: Clock
) -> None:
    (idle,) = await writer.add_facts(GLOBAL_SCOPE, ["Old fact"], sources=["x"], salience=0.4)
    clock.at = START + timedelta(days=20)
    (fresh,) = await writer.add_facts(GLOBAL_SCOPE, ["New fact"], sources=["x"], salience=0.4)

    clock.at = START + timedelta(days=30)
    assert await writer.decay(GLOBAL_SCOPE) == 1
    assert await writer.decay(GLOBAL_SCOPE) == 0  # once per idle period
    clock.at = START + timedelta(days=61)  # a day more: summer time took an hour
    assert await writer.decay(GLOBAL_SCOPE) == 2
    clock.at = START + timedelta(days=92)
    await writer.decay(GLOBAL_SCOPE)

    by_text = {i.text: i for i in read(store, MemoryLayer.SEMANTIC)}
    assert set(by_text) == {"Old fact", "New fact"}  # both still on disk
    assert by_text["Old fact"].id == idle.id and by_text["New fact"].id == fresh.id
    old, new = by_text["Old fact"], by_text["New fact"]
    assert (old.salience, old.status) == (0.1, "decayed")  # 0.4 → 0.2 → 0.1, then left alone
    assert old.decayed_at == START + timedelta(days=61)
    assert (new.salience, new.status) == (0.1, "decayed")


async def test_decay_never_goes_below_the_floor(
    writer: ItemKeeper, store: ItemStore, clock: Clock
) -> None:
    await writer.add_facts(GLOBAL_SCOPE, ["Faint fact"], sources=["x"], salience=0.06)
    clock.at = START + timedelta(days=31)

    await writer.decay(GLOBAL_SCOPE)

    (stored,) = read(store, MemoryLayer.SEMANTIC)
    assert (stored.salience, stored.status) == (0.05, "decayed")


async def test_an_item_shown_recently_does_not_decay(
    writer: ItemKeeper, store: ItemStore, clock: Clock
) -> None:
    (item,) = await writer.add_facts(GLOBAL_SCOPE, ["Shown fact"], sources=["x"])
    await store.touch(GLOBAL_SCOPE, [item], START + timedelta(days=25))
    clock.at = START + timedelta(days=31)

    assert await writer.decay(GLOBAL_SCOPE) == 0

    (stored,) = read(store, MemoryLayer.SEMANTIC)
    assert stored.last_used_at == START + timedelta(days=25)
    assert stored.salience == item.salience


async def test_a_decayed_item_seen_again_is_active_again(
    writer: ItemKeeper, store: ItemStore, clock: Clock
) -> None:
    await writer.add_facts(GLOBAL_SCOPE, ["Faded fact"], sources=["x"], salience=0.1)
    clock.at = START + timedelta(days=31)
    await writer.decay(GLOBAL_SCOPE)
    assert read(store, MemoryLayer.SEMANTIC)[0].status == "decayed"

    await writer.add_facts(GLOBAL_SCOPE, ["faded fact"], sources=["y"])

    (stored,) = read(store, MemoryLayer.SEMANTIC)
    assert stored.status == "active"
    assert stored.salience == pytest.approx(0.8)


async def test_decay_switched_off_changes_nothing(store: ItemStore, clock: Clock) -> None:
    writer = ItemKeeper(store, now=clock, decay_days=None)
    await writer.add_facts(GLOBAL_SCOPE, ["Old fact"], sources=["x"])
    before = on_disk(store, MemoryLayer.SEMANTIC)
    clock.at = START + timedelta(days=365)

    assert await writer.decay(GLOBAL_SCOPE) == 0
    assert on_disk(store, MemoryLayer.SEMANTIC) == before


async def test_forget_keeps_the_item_on_disk_and_a_new_twin_is_a_new_item(
    writer: ItemKeeper, store: ItemStore
) -> None:
    item = await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Dislikes jazz")

    forgotten = await writer.forget(GLOBAL_SCOPE, item.id)
    again = await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "dislikes jazz")

    assert forgotten is not None and forgotten.status == "forgotten"
    stored = read(store, MemoryLayer.SEMANTIC)
    assert [(i.id, i.status) for i in stored] == [(item.id, "forgotten"), (again.id, "active")]


async def test_update_changes_text_and_fingerprint_in_place(
    writer: ItemKeeper, store: ItemStore, clock: Clock
) -> None:
    item = await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Lives in Bonn", tags=["home"])
    clock.at = START + timedelta(days=2)

    updated = await writer.update(GLOBAL_SCOPE, item.id, text="Lives in Berlin", confidence=0.95)

    (stored,) = read(store, MemoryLayer.SEMANTIC)
    assert stored == updated
    assert (stored.id, stored.text, stored.confidence) == (item.id, "Lives in Berlin", 0.95)
    assert stored.fingerprint != item.fingerprint
    assert (stored.tags, stored.updated_at) == (("home",), clock.at)


async def test_an_empty_text_is_refused_and_nothing_is_written(
    writer: ItemKeeper, store: ItemStore
) -> None:
    with pytest.raises(ValueError, match="text"):
        await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "  \n ")
    item = await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Kept")
    with pytest.raises(ValueError, match="text"):
        await writer.update(GLOBAL_SCOPE, item.id, text=" ")

    assert await writer.add_facts(GLOBAL_SCOPE, ["", "  "], sources=["x"]) == []
    assert read(store, MemoryLayer.SEMANTIC) == [item]


async def test_tools_refuse_ids_of_another_scope_or_unknown_ones(writer: ItemKeeper) -> None:
    item = await writer.add(GLOBAL_SCOPE, MemoryLayer.EPISODIC, "Met Ana at the fair")

    assert await writer.forget(GROUP, item.id) is None
    assert await writer.update(GROUP, item.id, text="x") is None
    assert await writer.promote(GROUP, item.id) is None
    assert await writer.forget(GLOBAL_SCOPE, "s-doesnotexist") is None
    assert await writer.update(GLOBAL_SCOPE, "../../etc/passwd", text="x") is None


async def test_promote_copies_an_episodic_item_on_request(
    writer: ItemKeeper, store: ItemStore
) -> None:
    item = await writer.add(GLOBAL_SCOPE, MemoryLayer.EPISODIC, "Met Ana at the fair", type="turn")

    semantic = await writer.promote(GLOBAL_SCOPE, item.id)

    assert semantic is not None
    assert (semantic.layer, semantic.type, semantic.text) == (
        MemoryLayer.SEMANTIC,
        "fact",
        "Met Ana at the fair",
    )
    assert read(store, MemoryLayer.SEMANTIC) == [semantic]
    assert read(store, MemoryLayer.EPISODIC) == [item]
    assert await writer.promote(GLOBAL_SCOPE, semantic.id) is None  # only episodic items


async def test_a_group_writes_only_into_its_own_folder(writer: ItemKeeper, tmp_path: Path) -> None:
    event = TurnMemoryEvent(
        GROUP, "telegram:-100123", "t1", "Remember that we meet at 6.", "Ok", START
    )

    await writer.keep_turn(event)
    await writer.add_facts(GROUP, ["Group fact"], sources=["tag:chat-memory"])

    assert jsonl_files(tmp_path) == [
        "memory/chats/telegram%3A-100123/items/episodic/2026-02-07.jsonl",
        "memory/chats/telegram%3A-100123/items/semantic.jsonl",
    ]
