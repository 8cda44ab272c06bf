"""Retrieval into a memory pack: scores, per-layer top-k, soft and max token budgets measured
with the real token counter, nothing cut silently, scope isolation, last-used marks."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.llm.tokens import TokenCounter
from bot.memory.items.keeper import ItemKeeper
from bot.memory.items.keywords import ItemTerms, bm25
from bot.memory.items.store import ItemStore
from bot.memory.notes.working import WorkingNote
from bot.memory.recall.retrieval import MemoryQuery, MemoryRetriever
from bot.memory.recall.scoring import TopK
from bot.memory.recall.section import MemoryView
from bot.models import GLOBAL_SCOPE, MemoryItem, MemoryLayer, MemoryScope
from tests.clock import Clock

NOW = datetime(2026, 2, 7, 12, 0, tzinfo=UTC)
GROUP = MemoryScope(chat_key="telegram:-100123")
OWNER_CHAT = MemoryScope(chat_key="telegram:42")
OMITTED = re.compile(r"\n\n\((\d+) more memory items not shown: available via memory search\)$")
COUNTER = TokenCounter()
FILLER = "the quick brown fox jumps over the lazy dog near the river bank at dawn"


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def writer(store: ItemStore, clock: Clock) -> ItemKeeper:
    return ItemKeeper(store, now=clock, promotion_min_confidence=None)


@pytest.fixture
def retriever(store: ItemStore, clock: Clock) -> MemoryRetriever:
    return MemoryRetriever(store, COUNTER.count, now=clock)


def query(text: str, *scopes: MemoryScope, **options: object) -> MemoryQuery:
    return MemoryQuery(text, scopes or (GLOBAL_SCOPE,), **options)  # type: ignore[arg-type]


def announced(rendered: str) -> int:
    match = OMITTED.search(rendered)
    return int(match[1]) if match else 0


async def add_many(
    writer: ItemKeeper, layer: MemoryLayer, count: int, text: str, **kw: object
) -> list[MemoryItem]:
    return [
        await writer.add(GLOBAL_SCOPE, layer, f"{text} number {n}", **kw)  # type: ignore[arg-type]
        for n in range(count)
    ]


# ----------------------------------------------------------------------------- shape


async def test_no_memory_renders_nothing(retriever: MemoryRetriever) -> None:
    pack = await retriever.pack(query("anything"))

    assert pack.rendered == ""
    assert pack.view() == MemoryView(text="", omitted_lines=0)
    assert pack.diagnostics.cut == ()


async def test_the_pack_renders_seed_headings_in_priority_order(
    writer: ItemKeeper, retriever: MemoryRetriever, clock: Clock
) -> None:
    await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "User lives in Berlin")
    await writer.add(GLOBAL_SCOPE, MemoryLayer.PROCEDURAL, "make test", type="command")
    await writer.add(GLOBAL_SCOPE, MemoryLayer.EPISODIC, "User: hi | Assistant: hello", type="turn")
    clock.at = NOW + timedelta(days=1, hours=2)
    await writer.add(GLOBAL_SCOPE, MemoryLayer.EPISODIC, "User: bye | Assistant: ciao", type="turn")
    working = WorkingNote("- Task: taxes\n\n- Next: receipts", NOW, "updated 2 hours ago")

    pack = await retriever.pack(query("", working=working))

    assert pack.rendered == (
        "# Memory\n\n"
        "## Working Memory (updated 2 hours ago)\n- Task: taxes\n- Next: receipts\n\n"
        "## Long-term Memory\n- User lives in Berlin\n\n"
        "## Procedures\n- command: `make test`\n\n"
        "## Recent Context\n"
        "### 2026-02-08\n[14:00] User: bye | Assistant: ciao\n\n"
        "### 2026-02-07\n[12:00] User: hi | Assistant: hello"
    )
    assert pack.view() == MemoryView(text=pack.rendered, omitted_lines=0)
    assert pack.diagnostics.candidates == {
        "working": 2,
        "semantic": 1,
        "procedural": 1,
        "episodic": 2,
    }


async def test_score_parts_follow_the_documented_formula(
    writer: ItemKeeper, retriever: MemoryRetriever, clock: Clock
) -> None:
    await writer.add(
        GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Boiler code is 4711", confidence=0.9, salience=0.8
    )
    await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Cat is called Miso")
    clock.at = NOW + timedelta(days=90)

    pack = await retriever.pack(query("what is the boiler code?"))

    best, other = sorted(pack.diagnostics.scored, key=lambda c: -c.score.total)
    assert "Boiler" in best.line
    parts = best.score
    assert (parts.relevance, parts.recency, parts.layer_weight) == (1.0, 0.5, 1.0)
    assert parts.total == pytest.approx(0.5 * 1 + 0.2 * 0.5 + 0.2 * 0.8 + 0.1 * 0.9)
    assert other.score.relevance == 0.0


# ----------------------------------------------------------------------------- top-k


async def test_each_layer_keeps_its_top_k_and_the_rest_is_diagnosed(
    writer: ItemKeeper, retriever: MemoryRetriever
) -> None:
    await add_many(writer, MemoryLayer.SEMANTIC, 9, "garden fact")
    await add_many(writer, MemoryLayer.EPISODIC, 11, "kitchen event", type="turn")
    await add_many(writer, MemoryLayer.PROCEDURAL, 5, "deploy step", type="command")
    tomato = await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "The tomatoes need water daily")
    working = WorkingNote("\n".join(f"- note {n}" for n in range(9)), NOW, "updated just now")

    pack = await retriever.pack(query("tomatoes water", working=working))

    chosen = {layer: [c for c in pack.chosen if c.layer == layer] for layer in TopK.__annotations__}
    sizes = {layer: len(found) for layer, found in chosen.items()}
    assert sizes == {"working": 6, "episodic": 8, "semantic": 6, "procedural": 4}
    assert tomato in pack.items  # the relevant one won its layer
    cut = pack.diagnostics.cut
    assert all(c.reason == "top_k" for c in cut)
    assert len(cut) == 3 + 4 + 3 + 1
    assert pack.omitted == 0 and announced(pack.rendered) == 0  # top-k is choice, not a cut


async def test_top_k_comes_from_the_query(writer: ItemKeeper, retriever: MemoryRetriever) -> None:
    await add_many(writer, MemoryLayer.SEMANTIC, 4, "garden fact")

    pack = await retriever.pack(query("", top_k=TopK(semantic=1)))

    assert len(pack.items) == 1


# ----------------------------------------------------------------------------- budgets


async def test_low_scores_stay_within_the_soft_budget_and_cuts_are_announced(
    writer: ItemKeeper, retriever: MemoryRetriever
) -> None:
    await add_many(writer, MemoryLayer.SEMANTIC, 6, FILLER * 3)
    await add_many(writer, MemoryLayer.EPISODIC, 8, f"{FILLER * 3} episode", type="turn")

    pack = await retriever.pack(query("", soft_budget_tokens=300, max_budget_tokens=3000))

    assert COUNTER.count(pack.rendered) <= 300
    assert pack.diagnostics.tokens == COUNTER.count(pack.rendered)
    cut = pack.diagnostics.cut
    assert cut and {c.reason for c in cut} == {"soft_budget"}
    assert all(c.score < 0.5 and c.tokens > 0 for c in cut)
    assert pack.diagnostics.stretched == ()
    assert len(pack.items) + len(cut) == 14
    assert announced(pack.rendered) == len(cut) == pack.view().omitted_lines


async def test_high_scores_may_stretch_to_the_max_budget_and_no_further(
    writer: ItemKeeper, retriever: MemoryRetriever
) -> None:
    await add_many(writer, MemoryLayer.SEMANTIC, 6, f"solar panel inverter {FILLER * 2}")
    await add_many(writer, MemoryLayer.EPISODIC, 8, f"solar panel inverter episode {FILLER * 2}")

    pack = await retriever.pack(
        query("solar panel inverter", soft_budget_tokens=250, max_budget_tokens=600)
    )

    tokens = COUNTER.count(pack.rendered)
    assert 250 < tokens <= 600
    assert pack.diagnostics.stretched
    cut = pack.diagnostics.cut
    assert cut and {c.reason for c in cut} == {"max_budget"}
    assert announced(pack.rendered) == len(cut)


async def test_the_soft_budget_fills_layers_in_priority_order(
    writer: ItemKeeper, retriever: MemoryRetriever
) -> None:
    await add_many(writer, MemoryLayer.EPISODIC, 3, FILLER * 4, type="turn", salience=1.0)
    await add_many(writer, MemoryLayer.SEMANTIC, 3, FILLER * 4, salience=0.1)

    pack = await retriever.pack(query("", soft_budget_tokens=200, max_budget_tokens=200))

    assert {c.layer for c in pack.chosen} == {"semantic"}  # though episodic scores higher
    cut = pack.diagnostics.cut
    assert [c.layer for c in cut].count("episodic") == 3
    assert max(c.score for c in cut if c.layer == "episodic") > pack.chosen[0].score.total


@pytest.mark.parametrize("budget", [60, 120, 400, 1800])
async def test_any_budget_is_respected_to_the_token(
    writer: ItemKeeper, retriever: MemoryRetriever, budget: int
) -> None:
    for n in range(6):
        await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, f"fact {n}: {FILLER[: 10 * n + 5]}")
        await writer.add(GLOBAL_SCOPE, MemoryLayer.PROCEDURAL, f"cmd --flag-{n} {FILLER}")

    pack = await retriever.pack(query("fox", soft_budget_tokens=budget, max_budget_tokens=budget))

    assert COUNTER.count(pack.rendered) <= max(budget, 30)  # the header and notice always fit
    assert len(pack.items) + pack.omitted == 10
    assert announced(pack.rendered) == pack.omitted


# ----------------------------------------------------------------------------- scopes


async def test_a_group_query_never_sees_global_items(
    writer: ItemKeeper, retriever: MemoryRetriever
) -> None:
    await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Owner's bank PIN hint: birthday")
    await writer.add(GLOBAL_SCOPE, MemoryLayer.EPISODIC, "Owner asked about the bank", type="turn")
    await writer.add(GROUP, MemoryLayer.SEMANTIC, "The group meets at the bank on Fridays")

    pack = await retriever.pack(query("bank PIN", GROUP))

    assert [i.text for i in pack.items] == ["The group meets at the bank on Fridays"]
    assert "PIN" not in pack.rendered and "Owner" not in pack.rendered
    assert all(c.item is None or c.item.scope == GROUP.chat_key for c in pack.diagnostics.scored)


async def test_the_owner_sees_global_and_own_chat_items(
    writer: ItemKeeper, retriever: MemoryRetriever
) -> None:
    await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Global fact")
    await writer.add(OWNER_CHAT, MemoryLayer.SEMANTIC, "Chat fact")
    await writer.add(GROUP, MemoryLayer.SEMANTIC, "Group fact")

    pack = await retriever.pack(query("fact", GLOBAL_SCOPE, OWNER_CHAT))

    assert sorted(i.text for i in pack.items) == ["Chat fact", "Global fact"]


# ----------------------------------------------------------------------------- item state


async def test_forgotten_decayed_and_old_episodic_items_are_not_candidates(
    writer: ItemKeeper, retriever: MemoryRetriever, clock: Clock
) -> None:
    clock.at = NOW - timedelta(days=40)
    await writer.add(GLOBAL_SCOPE, MemoryLayer.EPISODIC, "Long ago event", type="turn")
    clock.at = NOW
    gone = await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Forgotten fact")
    await writer.forget(GLOBAL_SCOPE, gone.id)
    await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Faded fact", salience=0.1)
    clock.at = NOW + timedelta(days=31)
    await writer.decay(GLOBAL_SCOPE)
    await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Live fact")

    pack = await retriever.pack(query("fact event"))

    assert [i.text for i in pack.items] == ["Live fact"]


async def test_items_shown_are_marked_used_at_most_once_an_hour(
    writer: ItemKeeper, retriever: MemoryRetriever, store: ItemStore, clock: Clock
) -> None:
    item = await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Marked fact")

    def last_used() -> datetime | None:
        found = store.find(GLOBAL_SCOPE, item.id)
        return found.last_used_at if found else None

    await retriever.pack(query("marked"))
    first = last_used()
    clock.at = NOW + timedelta(minutes=30)
    await retriever.pack(query("marked"))
    unchanged = last_used()
    clock.at = NOW + timedelta(hours=2)
    await retriever.pack(query("marked"))

    assert (first, unchanged, last_used()) == (NOW, NOW, NOW + timedelta(hours=2))


async def test_building_without_packing_marks_nothing(
    writer: ItemKeeper, retriever: MemoryRetriever, store: ItemStore
) -> None:
    item = await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "Quiet fact")

    pack = retriever.build(query("quiet"), NOW)

    assert pack.items == (item,)
    stored = store.find(GLOBAL_SCOPE, item.id)
    assert stored is not None and stored.last_used_at is None


# ----------------------------------------------------------------------------- search


async def test_a_search_callable_decides_relevance(
    writer: ItemKeeper, store: ItemStore, clock: Clock
) -> None:
    ids = [(await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, f"fact {n}")).id for n in range(8)]
    asked: list[tuple[str, tuple[MemoryScope, ...]]] = []

    def search(text: str, scopes: Sequence[MemoryScope]) -> Mapping[str, float]:
        asked.append((text, tuple(scopes)))
        return {ids[7]: 12.0, ids[5]: 3.0}

    retriever = MemoryRetriever(store, COUNTER.count, now=clock, search=search)
    pack = await retriever.pack(query("paraphrase with no shared words", top_k=TopK(semantic=2)))

    assert [i.id for i in pack.items] == [ids[7], ids[5]]
    assert asked == [("paraphrase with no shared words", (GLOBAL_SCOPE,))]
    assert pack.chosen[0].score.relevance == 1.0
    assert pack.chosen[1].score.relevance == 0.25


# ----------------------------------------------------------------------------- keyword relevance


async def test_relevance_is_the_bm25_of_each_items_text_as_it_is_now(
    writer: ItemKeeper, retriever: MemoryRetriever
) -> None:
    boiler = await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "The boiler code is 4711")
    await writer.add(GLOBAL_SCOPE, MemoryLayer.SEMANTIC, "The cat is called Miso")
    await writer.add(GLOBAL_SCOPE, MemoryLayer.EPISODIC, "The boiler is old, the boiler man said")
    before = retriever.build(query("boiler code"), NOW)
    await writer.update(GLOBAL_SCOPE, boiler.id, text="The gate code is 0815")
    after = retriever.build(query("boiler code"), NOW)

    for pack in (before, after):
        scored = [c for c in pack.diagnostics.scored if c.item is not None]
        raw = bm25("boiler code", [c.item.text for c in scored if c.item is not None])
        assert [c.score.relevance for c in scored] == [r / max(raw) for r in raw]
    changed = {c.key: c.score.relevance for c in after.diagnostics.scored}[boiler.id]
    assert 0 < changed < 1  # "code" still matches, "boiler" no longer


def test_an_items_terms_are_made_once_and_again_when_its_text_changes() -> None:
    terms = ItemTerms(size=2)
    a, b, c = (
        MemoryItem(f"s-{n}", MemoryLayer.SEMANTIC, "fact", text, "", NOW, NOW)
        for n, text in enumerate(["red boxes", "blue box", "green box"])
    )

    first = terms.of([a])[0]
    assert terms.of([a])[0] is first
    assert terms.of([replace(a, text="yellow boxes")])[0].counts == {"yellow": 1, "boxe": 1}
    assert terms.of([a])[0].counts == first.counts == {"red": 1, "boxe": 1}
    kept = terms.of([a])[0]
    terms.of([b, c])  # one item more than it keeps: the first made goes
    assert terms.of([a])[0] is not kept
