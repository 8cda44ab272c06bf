"""Talking to the real app in memory tests: one message in, the replies and the prompt out."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path

from bot.app import App
from bot.models import ChatType, Inbound
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import OWNER

GROUP = -100500
GROUP_DIR = f"chats/telegram%3A{GROUP}"
OWNER_CHAT_DIR = f"chats/telegram%3A{OWNER}"
MEMORY_HEADER = "\n\n# Memory\n\n"
_ids = itertools.count(1)


class RecordingReplier:
    def __init__(self) -> None:
        self.sent: list[str] = []

    async def send(self, text: str) -> None:
        self.sent.append(text)

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        yield


async def say(
    app: App,
    text: str,
    *,
    user: int = OWNER,
    chat: int | None = None,
    chat_type: ChatType | None = None,
) -> list[str]:
    """Send one message (a private chat with `user` unless `chat` is given); the replies."""
    inbound = Inbound(
        id=f"telegram:update:{next(_ids)}",
        channel="telegram",
        chat_id=user if chat is None else chat,
        user_id=user,
        text=text,
        received_at=app.now(),
        chat_type=chat_type or ("private" if chat is None else "group"),
    )
    replier = RecordingReplier()
    await app.runner.handle(inbound, replier)
    return replier.sent


async def prompt_of_turn(
    app: App, fake: FakeOpenAI, *, user: int = OWNER, chat: int | None = None
) -> str:
    """Run one model turn; the system prompt the model was given (the reply must arrive)."""
    fake.script(Reply("ok"))
    assert await say(app, "what do you know?", user=user, chat=chat) == ["ok"]
    return str(fake.requests[-1]["messages"][0]["content"])


def memory_section(prompt: str) -> str:
    """The `# Memory` section (always the prompt's last part), or "" when there is none."""
    _, found, section = prompt.partition(MEMORY_HEADER)
    return "# Memory\n\n" + section if found else ""


def write(root: Path, name: str, text: str | bytes) -> Path:
    """Write a file under the workspace's memory folder, as a person would."""
    path = root / "memory" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path
