"""Scopes closed: a symlink planted in a group's memory folder — to the owner's MEMORY.md, or to
a file outside the workspace — is never read into the group's prompt or search, never changed
by the group's tags or /forget, and never named in a receipt (`Workspace.strays`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.talk import GROUP, GROUP_DIR, prompt_of_turn, say, tool_result

SECRET = "The owner's safe code is 4711."
SYSTEM = "root:x:0:0:root:/root:/bin/bash"


@pytest.fixture
def planted(app: App, workspace: Path, tmp_path: Path) -> Path:
    """The owner's MEMORY.md, and a group folder whose files are links out of it."""
    memory = workspace / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "MEMORY.md").write_text(f"## Facts\n- {SECRET}\n")
    outside = tmp_path / "passwd"
    outside.write_text(f"{SYSTEM}\n")
    group = memory / GROUP_DIR
    group.mkdir(parents=True)
    (group / "MEMORY.md").symlink_to(outside)
    (group / f"{app.now().date()}.md").symlink_to(memory / "MEMORY.md")
    (group / "HISTORY.md").symlink_to(memory / "MEMORY.md")
    return group


async def test_the_group_prompt_and_search_never_show_what_the_links_point_at(
    app: App, fake_openai: FakeOpenAI, planted: Path
) -> None:
    prompt = await prompt_of_turn(app, fake_openai, chat=GROUP)
    found = await tool_result(app, fake_openai, "memory_search", {"query": "safe code"}, chat=GROUP)
    system = await tool_result(
        app, fake_openai, "memory_search", {"query": "root bash"}, chat=GROUP
    )

    assert "4711" not in prompt and "root:x" not in prompt
    assert "4711" not in found and "root:x" not in system


async def test_the_groups_tags_and_forget_leave_the_linked_files_alone(
    app: App, fake_openai: FakeOpenAI, planted: Path, workspace: Path, tmp_path: Path
) -> None:
    fake_openai.script(Reply("<memory>The group meets on Fridays</memory>"))

    [tagged] = await say(app, "When do we meet?", chat=GROUP)
    [receipt] = await say(app, "/forget safe code", chat=GROUP)

    assert tagged == "Sorry, I couldn't save that to memory."
    assert "4711" not in receipt and not receipt.startswith("Forgot")
    assert (workspace / "memory" / "MEMORY.md").read_text() == f"## Facts\n- {SECRET}\n"
    assert (tmp_path / "passwd").read_text() == f"{SYSTEM}\n"
    assert (planted / "MEMORY.md").is_symlink()
