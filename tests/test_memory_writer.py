"""The one writer: files first, then the items made of them (citing their line), then the
index — so what a command writes is searchable at once, and a failure of the items never
undoes the markdown."""

from __future__ import annotations

import json
from pathlib import Path

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI
from tests.talk import say


def semantic_items(workspace: Path) -> list[dict[str, object]]:
    path = workspace / "memory" / "items" / "semantic.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_remember_writes_the_line_then_its_item_then_the_index(
    app: App, workspace: Path, fake_openai: FakeOpenAI
) -> None:
    assert await say(app, "/remember My locker number is 4242") == [
        "Saved to memory: My locker number is 4242"
    ]

    lines = (workspace / "memory" / "MEMORY.md").read_text().splitlines()
    number = lines.index("- My locker number is 4242") + 1
    [item] = semantic_items(workspace)
    assert item["text"] == "My locker number is 4242"
    assert item["references"] == [f"MEMORY.md#L{number}"]
    assert app.items_index is not None
    hits = app.items_index.index.search("locker number", scopes=[""], k=5)
    assert {h.kind for h in hits} == {"memory", "item"}  # searchable before any turn


async def test_items_failing_never_undo_the_markdown(
    app: App, workspace: Path, fake_openai: FakeOpenAI
) -> None:
    items = workspace / "memory" / "items"
    items.mkdir(parents=True)
    (items / "semantic.jsonl").mkdir()  # a folder where the file should be: writes fail

    assert await say(app, "/remember The boiler was serviced in May") == [
        "Saved to memory: The boiler was serviced in May"
    ]

    memory = (workspace / "memory" / "MEMORY.md").read_text()
    assert "- The boiler was serviced in May" in memory
