"""Talking to the real app in tests: a message in; the replies, the prompt and the session out."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.app import App
from bot.models import ChatType, Inbound
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls
from tests.harness import OWNER

GROUP = -100500
GROUP_DIR = f"chats/telegram%3A{GROUP}"
OWNER_CHAT_DIR = f"chats/telegram%3A{OWNER}"
MEMORY_HEADER = "\n\n# Memory\n\n"
RELEVANT_HEADER = "\n\n# Relevant Memory\n"
_ids = itertools.count(1)


class RecordingReplier:
    """Keeps what the bot sent, and counts how often it showed "typing"."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.typing_entries = 0

    def parts(self, text: str) -> list[str]:
        return [text]

    async def send_part(self, part: object) -> None:
        assert isinstance(part, str)
        self.sent.append(part)

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        self.typing_entries += 1
        yield


def message(
    text: str,
    *,
    at: datetime,
    user: int = OWNER,
    chat: int | None = None,
    chat_type: ChatType | None = None,
    channel: str = "telegram",
) -> Inbound:
    """One message received `at`: a private chat with `user` unless `chat` is given (a group)."""
    return Inbound(
        id=f"{channel}:update:{next(_ids)}",
        channel=channel,
        chat_id=user if chat is None else chat,
        user_id=user,
        text=text,
        received_at=at,
        chat_type=chat_type or ("private" if chat is None else "group"),
    )


async def handle(app: App, inbound: Inbound) -> list[str]:
    """Hand one message to the turn runner; the replies."""
    replier = RecordingReplier()
    await app.runner.handle(inbound, replier)
    return replier.sent


async def say(
    app: App,
    text: str,
    *,
    at: datetime | None = None,
    user: int = OWNER,
    chat: int | None = None,
    chat_type: ChatType | None = None,
) -> list[str]:
    """Send one message (received now by the app's clock unless `at` is given); the replies."""
    when = app.now() if at is None else at
    return await handle(app, message(text, at=when, user=user, chat=chat, chat_type=chat_type))


async def prompt_of_turn(
    app: App, fake: FakeOpenAI, *, user: int = OWNER, chat: int | None = None
) -> str:
    """Run one model turn; the system prompt the model was given (the reply must arrive)."""
    fake.script(Reply("ok"))
    assert await say(app, "what do you know?", user=user, chat=chat) == ["ok"]
    return str(fake.requests[-1]["messages"][0]["content"])


async def tool_result(
    app: App,
    fake: FakeOpenAI,
    name: str,
    args: dict[str, Any],
    *,
    chat: int | None = None,
    chat_type: ChatType | None = None,
) -> str:
    """One turn in which the model calls one tool; the tool's answer, as the model got it."""
    fake.script(ToolCalls([(name, args)]), Reply("done"))
    assert await say(app, "use your tool", chat=chat, chat_type=chat_type) == ["done"]
    answer = fake.requests[-1]["messages"][-1]
    assert answer["role"] == "tool"
    return str(answer["content"])


def memory_section(prompt: str) -> str:
    """The `# Memory` section (the prompt's last part but `# Relevant Memory`), or "" when
    there is none."""
    _, found, section = prompt.partition(MEMORY_HEADER)
    section = section.partition(RELEVANT_HEADER)[0]
    return "# Memory\n\n" + section if found else ""


def relevant_section(prompt: str) -> str:
    """The `# Relevant Memory` section (always the prompt's last part), or "" when none."""
    _, found, section = prompt.partition(RELEVANT_HEADER)
    return "# Relevant Memory\n" + section if found else ""


def session(workspace: Path, key: str = f"telegram:{OWNER}") -> dict[str, Any]:
    """The saved session document of `key` (the owner's private chat by default)."""
    path = workspace / "sessions" / f"{key.replace(':', '%3A')}.json"
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def write(root: Path, name: str, text: str | bytes) -> Path:
    """Write a file under the workspace's memory folder, as a person would."""
    path = root / "memory" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def write_session(
    workspace: Path,
    messages: list[Any],
    *,
    updated_at: datetime,
    key: str = f"telegram:{OWNER}",
) -> Path:
    """Save a session document by hand (as an older or crashed process left it): `messages`
    are written as given, raw JSON, so they may be anything."""
    path = workspace / "sessions" / f"{key.replace(':', '%3A')}.json"
    document = {
        "version": 1,
        "key": key,
        "created_at": updated_at.isoformat(),
        "updated_at": updated_at.isoformat(),
        "metadata": {},
        "messages": messages,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1))
    return path
