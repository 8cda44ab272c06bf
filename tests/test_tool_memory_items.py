"""`memory_add` / `memory_update` / `memory_promote` / `memory_forget` through the real app: round
trips on the JSONL files, ids named in every answer, one chat's ids useless in another."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI
from tests.talk import GROUP, GROUP_DIR, tool_result

ID = re.compile(r"\b([eps]\d*-[0-9a-f]+)\b")


def items(workspace: Path, name: str = "semantic.jsonl", folder: str = "") -> list[dict[str, Any]]:
    path = workspace / "memory" / folder / "items" / name
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_id(answer: str) -> str:
    found = ID.search(answer)
    assert found is not None, answer
    return found[1]


async def test_add_stores_a_semantic_fact_and_names_its_id(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    answer = await tool_result(
        app, fake_openai, "memory_add", {"text": "Mia's recital is on Friday", "tags": ["mia"]}
    )

    item_id = first_id(answer)
    assert answer == (
        f"stored {item_id} (semantic fact, confidence 0.70, salience 0.60, tags: mia): "
        "Mia's recital is on Friday"
    )
    [stored] = items(workspace)
    assert (stored["id"], stored["text"], stored["tags"]) == (
        item_id,
        "Mia's recital is on Friday",
        ["mia"],
    )


async def test_adding_the_same_text_again_reinforces_the_item(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    first = await tool_result(app, fake_openai, "memory_add", {"text": "Tom drinks oat milk"})
    again = await tool_result(app, fake_openai, "memory_add", {"text": "tom drinks oat milk."})

    assert again.startswith(f"reinforced {first_id(first)} (semantic fact, confidence 0.91")
    assert len(items(workspace)) == 1


async def test_update_changes_text_confidence_salience_and_tags(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    item_id = first_id(await tool_result(app, fake_openai, "memory_add", {"text": "Gym on Monday"}))
    change = {"id": item_id, "text": "Gym on Tuesday", "confidence": 0.9, "salience": 0.2}

    answer = await tool_result(app, fake_openai, "memory_update", {**change, "tags": ["gym"]})

    assert answer == (
        f"updated {item_id} (semantic fact, confidence 0.90, salience 0.20, tags: gym): "
        "Gym on Tuesday"
    )
    [stored] = items(workspace)
    assert (stored["text"], stored["confidence"], stored["salience"], stored["tags"]) == (
        "Gym on Tuesday",
        0.9,
        0.2,
        ["gym"],
    )


async def test_promote_copies_an_episodic_item_to_semantic_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    added = await tool_result(
        app, fake_openai, "memory_add", {"text": "We chose Postgres", "layer": "episodic"}
    )
    episodic_id = first_id(added)

    answer = await tool_result(app, fake_openai, "memory_promote", {"id": episodic_id})

    semantic_id = ID.findall(answer)[1]
    assert answer.startswith(f"promoted {episodic_id} to {semantic_id} (semantic fact")
    [stored] = items(workspace)
    assert stored["id"] == semantic_id
    assert f"item:{episodic_id}" in stored["references"]


async def test_forget_forgets_the_items_text_everywhere_as_forget_does(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    item_id = first_id(await tool_result(app, fake_openai, "memory_add", {"text": "Old phone"}))

    answer = await tool_result(app, fake_openai, "memory_forget", {"id": item_id})

    assert answer.startswith("Forgot 1 line and ") and "containing “Old phone” (items 1" in answer
    assert "items/semantic.jsonl: Old phone" in answer
    assert answer.endswith("/undo within 10 minutes puts it back; after that it is gone.")
    assert items(workspace) == []  # the line is gone, not marked


async def test_a_group_works_on_its_own_items_and_cannot_touch_the_owners(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    owners = first_id(await tool_result(app, fake_openai, "memory_add", {"text": "Owner's PIN"}))

    added = await tool_result(app, fake_openai, "memory_add", {"text": "Bring chairs"}, chat=GROUP)
    answers = [
        await tool_result(app, fake_openai, name, args, chat=GROUP)
        for name, args in [
            ("memory_update", {"id": owners, "text": "leaked"}),
            ("memory_forget", {"id": owners}),
        ]
    ]

    assert answers == ["no item with that id here"] * 2
    assert [i["text"] for i in items(workspace, folder=GROUP_DIR)] == ["Bring chairs"]
    assert [(i["text"], i["status"]) for i in items(workspace)] == [("Owner's PIN", "active")]
    group_id = first_id(added)
    assert await tool_result(app, fake_openai, "memory_forget", {"id": group_id}) == (
        "no item with that id here"
    )


async def test_an_unknown_id_is_answered_not_raised(app: App, fake_openai: FakeOpenAI) -> None:
    missing = "s-0123456789"

    update = await tool_result(app, fake_openai, "memory_update", {"id": missing, "salience": 1})
    promote = await tool_result(app, fake_openai, "memory_promote", {"id": "e20261120-00aa"})
    semantic = await tool_result(app, fake_openai, "memory_promote", {"id": missing})

    assert update == "no item with that id here"
    assert promote == "no item with that id here (or it was forgotten)"
    assert semantic == "error: only episodic items (ids starting with e) can be promoted"


async def test_bad_arguments_are_answered_in_words(app: App, fake_openai: FakeOpenAI) -> None:
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("memory_add", {}, "error: `text` is required"),
        ("memory_add", {"text": "x", "layer": "forever"}, "error: `layer` must be one of:"),
        ("memory_add", {"text": "x", "tags": "a,b"}, "error: `tags` must be a list of strings"),
        ("memory_update", {"id": "s-01"}, "error: nothing to change"),
        ("memory_update", {"id": "s-01", "confidence": 1.5}, "error: `confidence` must be from"),
        ("memory_update", {"id": "s-01", "salience": "high"}, "error: `salience` must be a number"),
        ("memory_forget", {"id": "../../etc"}, "error: `id` is an item id"),
        ("memory_forget", {"id": "s-01", "why": "x"}, "error: unknown argument 'why'"),
    ]

    for name, args, expected in cases:
        answer = await tool_result(app, fake_openai, name, args)
        assert answer.startswith(expected), (name, args, answer)
