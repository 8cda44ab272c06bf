"""System 20, context building: the `# Memory` section, fresh every turn, and whose memory it is."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.app import App
from bot.memory.long_term import LongTermMemory
from bot.memory.notes import DailyNotes
from bot.models import GLOBAL_SCOPE, ChatMessage, ChatType, Inbound, Session
from bot.pipeline import TurnContext
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from bot.systems.context import ContextBuilding
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import FRIEND, OWNER

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=ZoneInfo("Europe/Berlin"))  # a Saturday
PERSONA = "You are a test persona."
CLOCK_LINE = "Current time: Saturday 2026-11-21 09:30 CET"
GROUP = -100500
_ids = itertools.count(1)


# ----------------------------------------------------------------------------- the system alone


async def build_prompt(root: Path, *, recent_days: int = 3) -> str:
    workspace = Workspace(root)
    system = ContextBuilding(
        persona=PERSONA,
        long_term=LongTermMemory(workspace, FileLocks()),
        notes=DailyNotes(workspace, user_chars=200, assistant_chars=300),
        recent_days=recent_days,
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
    return ctx.system_prompt


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
        f"{PERSONA}\n\n{CLOCK_LINE}\n\n"
        "# Memory\n\n"
        "## Long-term Memory\nAnn likes green tea.\n\n"
        "## Today's Notes\n[08:00] User: today | Assistant: ok\n\n"
        "## Recent Context\n"
        "### 2026-11-20\n[20:00] User: yesterday | Assistant: ok\n\n"
        "### 2026-11-18\n[10:00] User: three days ago | Assistant: ok"
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

    assert prompt == f"{PERSONA}\n\n{CLOCK_LINE}"


# ----------------------------------------------------------------------------- through the runner


class QuietReplier:
    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send(self, text: str) -> None:
        self.sent.append(text)

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        yield


async def turn(app: App, fake: FakeOpenAI, *, user: int, chat: int, chat_type: ChatType) -> str:
    """Run one turn and return the system prompt the model was given."""
    fake.script(Reply("ok"))
    inbound = Inbound(
        id=f"telegram:update:{next(_ids)}",
        channel="telegram",
        chat_id=chat,
        user_id=user,
        text="what do you know?",
        received_at=app.now(),
        chat_type=chat_type,
    )
    replier = QuietReplier()
    await app.runner.handle(inbound, replier)
    assert replier.sent == ["ok"]
    return str(fake.last_request["messages"][0]["content"])


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
    first = await turn(app, fake_openai, user=OWNER, chat=OWNER, chat_type="private")

    (workspace / "memory" / "MEMORY.md").write_text("Ann switched to coffee.")
    second = await turn(app, fake_openai, user=OWNER, chat=OWNER, chat_type="private")

    assert "Ann likes green tea." in first
    assert "Ann switched to coffee." in second
    assert "green tea" not in second


async def test_the_owners_private_chat_sees_the_global_memory_only(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    seed_memory(workspace, app.now().date().isoformat())

    prompt = await turn(app, fake_openai, user=OWNER, chat=OWNER, chat_type="private")

    assert "OWNER-LONG-TERM" in prompt and "OWNER-NOTE" in prompt
    assert "GROUP-" not in prompt and "FRIEND-" not in prompt


@pytest.mark.parametrize("user", [OWNER, FRIEND], ids=["owner", "friend"])
async def test_a_group_chat_sees_only_its_own_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path, user: int
) -> None:
    today = app.now().date().isoformat()
    seed_memory(workspace, today)

    prompt = await turn(app, fake_openai, user=user, chat=GROUP, chat_type="group")

    assert "GROUP-LONG-TERM" in prompt and "GROUP-NOTE" in prompt
    assert "OWNER-" not in prompt and "FRIEND-" not in prompt
    assert (workspace / "memory" / f"{today}.md").read_text() == "OWNER-NOTE"  # not written
    group_note = workspace / "memory" / "chats" / f"telegram%3A{GROUP}" / f"{today}.md"
    assert "what do you know?" in group_note.read_text()


async def test_an_allowed_users_private_chat_sees_only_its_own_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    seed_memory(workspace, app.now().date().isoformat())

    prompt = await turn(app, fake_openai, user=FRIEND, chat=FRIEND, chat_type="private")

    assert "FRIEND-LONG-TERM" in prompt and "FRIEND-NOTE" in prompt
    assert "OWNER-" not in prompt and "GROUP-" not in prompt
