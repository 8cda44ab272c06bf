"""`memory_edit`: the model corrects one line of MEMORY.md or chat memory by its text — under
the writer's lock, its items following — and never touches another chat's memory."""

from __future__ import annotations

import json
from pathlib import Path

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.talk import GROUP, GROUP_DIR, OWNER_CHAT_DIR, say, tool_result, write

MEMORY = "# Me\n- Lives in Porto\n- Likes green tea\n- Likes black tea\n"


def memory(workspace: Path, folder: str = "") -> str:
    return (workspace / "memory" / folder / "MEMORY.md").read_text()


async def test_a_line_is_replaced_by_its_text_keeping_its_bullet(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", MEMORY)

    answer = await tool_result(
        app, fake_openai, "memory_edit", {"old": "porto", "new": "Lives in Lisbon"}
    )

    assert answer == "changed in MEMORY.md: - Lives in Porto → - Lives in Lisbon"
    assert memory(workspace) == MEMORY.replace("Porto", "Lisbon")


async def test_a_line_is_deleted_when_no_new_text_is_given(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", MEMORY)

    answer = await tool_result(app, fake_openai, "memory_edit", {"old": "green tea"})

    assert answer == "deleted from MEMORY.md: - Likes green tea"
    assert memory(workspace) == "# Me\n- Lives in Porto\n- Likes black tea\n"


async def test_a_text_in_several_lines_or_none_changes_nothing_and_says_why(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", MEMORY)

    several = await tool_result(app, fake_openai, "memory_edit", {"old": "tea", "new": "x"})
    none = await tool_result(app, fake_openai, "memory_edit", {"old": "coffee", "new": "x"})

    assert several.startswith("error: 2 lines of MEMORY.md hold 'tea' (- Likes green tea; ")
    assert none == "error: no line of MEMORY.md holds 'coffee'; nothing was changed"
    assert memory(workspace) == MEMORY


async def test_chat_memory_and_a_groups_memory_are_their_own(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", MEMORY)
    write(workspace, f"{OWNER_CHAT_DIR}/MEMORY.md", "- We speak Portuguese here\n")
    write(workspace, f"{GROUP_DIR}/MEMORY.md", "- The group lives in Porto\n")

    mine = await tool_result(
        app, fake_openai, "memory_edit", {"old": "Portuguese", "new": "English", "where": "chat"}
    )
    theirs = await tool_result(
        app, fake_openai, "memory_edit", {"old": "Porto", "new": "Braga"}, chat=GROUP
    )

    assert mine == "changed in this chat's memory: - We speak Portuguese here → - English"
    assert theirs == "changed in MEMORY.md: - The group lives in Porto → - Braga"
    assert memory(workspace) == MEMORY  # the owner's own memory: reachable from neither
    assert memory(workspace, GROUP_DIR) == "- Braga\n"


async def test_the_items_made_of_the_line_follow_it(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted. <memory>Ann's birthday is 12 May</memory>"))
    await say(app, "Remember: Ann, birthday 12 May")

    await tool_result(
        app, fake_openai, "memory_edit", {"old": "12 May", "new": "Ann's birthday is 14 May"}
    )

    path = workspace / "memory" / "items" / "semantic.jsonl"
    [item] = [json.loads(line) for line in path.read_text().splitlines()]
    assert item["text"] == "Ann's birthday is 14 May"
    assert "- Ann's birthday is 14 May" in memory(workspace)
