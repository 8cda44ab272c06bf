"""System 20, context building: the `# Memory` section, fresh every turn, and whose memory it is."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.app import App
from bot.llm.tokens import TokenCounter
from bot.memory.notes.daily import NoteFormat
from bot.memory.notes.tags import TAG_INSTRUCTIONS
from bot.memory.notes.working import WorkingMemory, age_phrase
from bot.memory.recall.markdown import MarkdownMemory
from bot.memory.recall.prompt import MemoryPrompt
from bot.models import GLOBAL_SCOPE, ChatMessage, Inbound, Session
from bot.pipeline import TurnContext
from bot.storage.files import FileLocks
from bot.storage.lines import LineReader
from bot.storage.workspace import Workspace
from bot.systems.context import CONTEXT_NOTE, ContextBuilding
from bot.tools.memory_search import RECALL_INSTRUCTIONS
from tests.fakes.openai_api import FakeOpenAI
from tests.harness import FRIEND, OWNER
from tests.talk import GROUP, GROUP_DIR, OWNER_CHAT_DIR, memory_section, prompt_of_turn
from tests.talk import write as write_memory

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=ZoneInfo("Europe/Berlin"))  # a Saturday
PERSONA = "You are a test persona."
CLOCK_LINE = "Current time: Saturday 2026-11-21 09:30 CET"
REMEMBERING = f"# Remembering\n{CONTEXT_NOTE}"  # without tag and recall instructions
# the app's: tags, recall, then where each message's context is
INSTRUCTIONS = f"{TAG_INSTRUCTIONS}\n\n{RECALL_INSTRUCTIONS}\n\n{CONTEXT_NOTE}"


# ----------------------------------------------------------------------------- the system alone


async def build_prompt(root: Path, *, recent_days: int = 3) -> str:
    workspace = Workspace(root)
    working = WorkingMemory(workspace, FileLocks(), stale_days=7, now=lambda: NOW)
    recall = MarkdownMemory(
        workspace,
        LineReader(),
        working,
        TokenCounter().count,
        recent_days=recent_days,
        budget_tokens=3500,
    )
    system = ContextBuilding(
        persona=PERSONA,
        instructions="",
        memory=MemoryPrompt(recall),
        notes=NoteFormat(user_chars=200, assistant_chars=300),
        now=lambda: NOW,
    )
    ctx = TurnContext(
        inbound=Inbound(id="t:1", channel="t", chat_id=1, user_id=1, text="hi", received_at=NOW),
        turn_id="t1",
        scope=GLOBAL_SCOPE,
        session=Session(key="t:1", messages=(), created_at=NOW, updated_at=NOW),
        user_message=ChatMessage(role="user", content="hi"),
    )
    await system.process(ctx)
    context = [m.content or "" for m in ctx.message_prompt if m.role == "system"]
    parts = [ctx.system_prompt, ctx.memory_prompt, *context]
    return "\n\n".join(part for part in parts if part)  # as `prompt_of_turn` joins them


def write(root: Path, name: str, text: str) -> None:
    path = root / "memory" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def note(root: Path, days_back: int, text: str) -> None:
    write(root, f"{(NOW.date() - timedelta(days=days_back)).isoformat()}.md", text)


async def test_every_memory_part_in_its_section_recent_days_newest_first(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "Ann likes green tea.\n")
    note(tmp_path, 0, "[08:00] User: today | Assistant: ok\n")
    note(tmp_path, 1, "[20:00] User: yesterday | Assistant: ok\n")
    note(tmp_path, 3, "[10:00] User: three days ago | Assistant: ok\n")
    note(tmp_path, 4, "[10:00] User: too long ago | Assistant: ok\n")

    prompt = await build_prompt(tmp_path, recent_days=3)

    assert prompt == (
        f"{PERSONA}\n\n{REMEMBERING}\n\n"
        "# Memory\n\n"
        "## Long-term Memory\nAnn likes green tea.\n\n"
        "## Today's Notes\n[08:00] User: today | Assistant: ok\n\n"
        "## Recent Context\n"
        "### 2026-11-20\n[20:00] User: yesterday | Assistant: ok\n\n"
        "### 2026-11-18\n[10:00] User: three days ago | Assistant: ok\n\n"
        f"{CLOCK_LINE}"
    )


async def test_empty_parts_are_left_out(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "  \n\n")
    note(tmp_path, 0, "[08:00] User: today | Assistant: ok\n")

    prompt = await build_prompt(tmp_path)

    assert "## Today's Notes\n[08:00]" in prompt
    assert "## Long-term Memory" not in prompt
    assert "## Recent Context" not in prompt


async def test_with_recent_days_zero_older_notes_are_left_out(tmp_path: Path) -> None:
    note(tmp_path, 1, "[20:00] User: yesterday | Assistant: ok\n")

    prompt = await build_prompt(tmp_path, recent_days=0)

    assert "yesterday" not in prompt
    assert "# Memory" not in prompt


async def test_no_memory_means_no_memory_header(tmp_path: Path) -> None:
    prompt = await build_prompt(tmp_path)

    assert prompt == f"{PERSONA}\n\n{REMEMBERING}\n\n{CLOCK_LINE}"


# ----------------------------------------------------------------------------- through the runner


def seed_memory(workspace: Path, today: str) -> None:
    memory = workspace / "memory"
    (memory / "MEMORY.md").write_text("OWNER-LONG-TERM")
    (memory / f"{today}.md").write_text("OWNER-NOTE")
    for key, label in ((f"telegram%3A{GROUP}", "GROUP"), (f"telegram%3A{FRIEND}", "FRIEND")):
        (memory / "chats" / key).mkdir(parents=True)
        (memory / "chats" / key / "MEMORY.md").write_text(f"{label}-LONG-TERM")
        (memory / "chats" / key / f"{today}.md").write_text(f"{label}-NOTE")


async def test_memory_edited_by_hand_between_turns_is_in_the_next_prompt(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    (workspace / "memory" / "MEMORY.md").write_text("Ann likes green tea.")
    first = await prompt_of_turn(app, fake_openai)

    (workspace / "memory" / "MEMORY.md").write_text("Ann switched to coffee.")
    second = await prompt_of_turn(app, fake_openai)

    assert "Ann likes green tea." in first
    assert "Ann switched to coffee." in second
    assert "green tea" not in second


async def test_the_owners_private_chat_sees_the_global_memory_only(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    seed_memory(workspace, app.now().date().isoformat())

    prompt = await prompt_of_turn(app, fake_openai)

    assert "OWNER-LONG-TERM" in prompt and "OWNER-NOTE" in prompt
    assert "GROUP-" not in prompt and "FRIEND-" not in prompt


@pytest.mark.parametrize("user", [OWNER, FRIEND], ids=["owner", "friend"])
async def test_a_group_chat_sees_only_its_own_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path, user: int
) -> None:
    today = app.now().date().isoformat()
    seed_memory(workspace, today)

    prompt = await prompt_of_turn(app, fake_openai, user=user, chat=GROUP)

    assert "GROUP-LONG-TERM" in prompt and "GROUP-NOTE" in prompt
    assert "OWNER-" not in prompt and "FRIEND-" not in prompt
    assert (workspace / "memory" / f"{today}.md").read_text() == "OWNER-NOTE"  # not written
    group_note = workspace / "memory" / "chats" / f"telegram%3A{GROUP}" / f"{today}.md"
    assert "what do you know?" in group_note.read_text()


async def test_an_allowed_users_private_chat_sees_only_its_own_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    seed_memory(workspace, app.now().date().isoformat())

    prompt = await prompt_of_turn(app, fake_openai, user=FRIEND)

    assert "FRIEND-LONG-TERM" in prompt and "FRIEND-NOTE" in prompt
    assert "OWNER-" not in prompt and "GROUP-" not in prompt


# ----------------------------------------------------------------------------- every part, in order


def set_age(path: Path, *, hours: float) -> None:
    moment = time.time() - hours * 3600
    os.utime(path, (moment, moment))


async def test_every_part_in_order_with_chat_and_working_memory_in_the_owners_chat(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    today = app.now().date()
    yesterday = today - timedelta(days=1)
    write_memory(workspace, "MEMORY.md", "Ann likes green tea.\n")
    write_memory(workspace, f"{OWNER_CHAT_DIR}/MEMORY.md", "This chat plans trips.\n")
    working = write_memory(workspace, f"working/telegram%3A{OWNER}.md", "- Topic: Lisbon\n")
    set_age(working, hours=2.1)
    updated = datetime.fromtimestamp(working.stat().st_mtime, tz=UTC)
    write_memory(workspace, f"{today}.md", "[08:00] User: today | Assistant: ok\n")
    write_memory(workspace, f"{yesterday}.md", "[20:00] User: yesterday | Assistant: ok\n")

    prompt = await prompt_of_turn(app, fake_openai)

    assert memory_section(prompt) == (
        "# Memory\n\n"
        "## Long-term Memory\nAnn likes green tea.\n\n"
        "## Chat Memory\nThis chat plans trips.\n\n"
        f"## Working Memory ({age_phrase(updated, app.now())})\n- Topic: Lisbon\n\n"
        "## Today's Notes\n[08:00] User: today | Assistant: ok\n\n"
        f"## Recent Context\n### {yesterday}\n[20:00] User: yesterday | Assistant: ok"
    )
    remembering = f"\n\n# Remembering\n{INSTRUCTIONS}\n\n# Memory\n\n"
    assert remembering in prompt


async def test_without_memory_the_prompt_still_says_how_to_remember(
    app: App, fake_openai: FakeOpenAI
) -> None:
    prompt = await prompt_of_turn(app, fake_openai)

    system, context = prompt.split("\n\nCurrent time: ")
    assert system.endswith(f"# Remembering\n{INSTRUCTIONS}")
    assert "# Memory" not in prompt
    assert context.startswith(f"{app.now():%A %Y-%m-%d}")  # the time, at the end


async def test_stale_working_memory_is_left_out(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    working = write_memory(
        workspace, f"working/telegram%3A{OWNER}.md", "- Topic: last week's thing\n"
    )
    set_age(working, hours=8 * 24)

    prompt = await prompt_of_turn(app, fake_openai)

    assert "Working Memory" not in prompt and "last week's thing" not in prompt
    assert working.exists()  # ignored, not deleted


async def test_a_same_size_hand_edit_is_in_the_next_prompt(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    path = write_memory(workspace, "MEMORY.md", "Ann likes tea.\n")
    first = await prompt_of_turn(app, fake_openai)

    path.write_text("Bob likes tea.\n")
    second = await prompt_of_turn(app, fake_openai)

    assert "Ann likes tea." in first
    assert "Bob likes tea." in second and "Ann" not in second


@pytest.mark.parametrize("user", [OWNER, FRIEND], ids=["owner", "friend"])
async def test_nothing_global_ever_enters_a_group_prompt(
    app: App, fake_openai: FakeOpenAI, workspace: Path, user: int
) -> None:
    today = app.now().date()
    yesterday = today - timedelta(days=1)
    for name in ("MEMORY.md", f"{today}.md", f"{yesterday}.md", "HISTORY.md", "HISTORY-2026-11.md"):
        write_memory(workspace, name, f"OWNER-{name}\n")
    write_memory(workspace, f"{OWNER_CHAT_DIR}/MEMORY.md", "OWNER-CHAT-MEMORY\n")
    write_memory(workspace, f"working/telegram%3A{OWNER}.md", "OWNER-WORKING\n")
    write_memory(workspace, f"{GROUP_DIR}/MEMORY.md", "GROUP-LONG-TERM\n")
    write_memory(workspace, f"{GROUP_DIR}/{yesterday}.md", "GROUP-YESTERDAY\n")
    write_memory(workspace, f"working/telegram%3A{GROUP}.md", "GROUP-WORKING\n")

    prompt = await prompt_of_turn(app, fake_openai, user=user, chat=GROUP)

    assert "OWNER-" not in prompt
    section = memory_section(prompt)
    assert "## Long-term Memory\nGROUP-LONG-TERM" in section
    assert f"### {yesterday}\nGROUP-YESTERDAY" in section
    assert "GROUP-WORKING" in section
    assert "## Chat Memory" not in section  # a group's own memory is its long-term memory
