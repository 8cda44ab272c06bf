"""Talking to the real app in tests: a message in; the replies, the prompt and the session out."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.app import App
from bot.models import ChatType, Document, Inbound, Keyed
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls
from tests.harness import OWNER

GROUP = -100500
GROUP_DIR = f"chats/telegram%3A{GROUP}"
OWNER_CHAT_DIR = f"chats/telegram%3A{OWNER}"
MEMORY_HEADER = "\n\n# Memory\n\n"
RELEVANT_HEADER = "\n\n# Relevant Memory\n"
TIME = "\n\nCurrent time: "
RECALLED_HEADER = "\n\n# Memory for this message\n"
_ids = itertools.count(1)


class RecordingReplier:
    """Keeps what the bot sent (texts; files and receipts apart), and counts how often it showed
    "typing" and acknowledged a message."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.documents: list[Document] = []
        self.receipts: list[Keyed] = []  # messages with buttons (memory receipts)
        self.typing_entries = 0
        self.acknowledged = 0

    def parts(self, text: str) -> list[str]:
        return [text]

    async def send_part(self, part: object) -> None:
        if isinstance(part, Document):
            self.documents.append(part)
            return
        if isinstance(part, Keyed):
            self.receipts.append(part)
            return
        assert isinstance(part, str)
        self.sent.append(part)

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        self.typing_entries += 1
        yield

    async def acknowledge(self) -> None:
        self.acknowledged += 1


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
    await app.router.handle(inbound, replier)
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
    """Run one model turn; the memory the model was given: the system prompt, then the
    message's context (the reply must arrive)."""
    fake.script(Reply("ok"))
    assert await say(app, "what do you know?", user=user, chat=chat) == ["ok"]
    return system_text(fake.requests[-1])


def system_text(request: dict[str, Any]) -> str:
    """A request's system messages (the system prompt, the message's context), joined."""
    return "\n\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "system")


def conversation(request: dict[str, Any]) -> list[dict[str, Any]]:
    """A request's messages after the system prompt, without memory (a system message that
    opens with `# Memory`) and the message's context (one that ends with the time)."""
    return [m for m in request["messages"][1:] if not is_context(m) and not is_memory(m)]


def is_memory(message: dict[str, Any]) -> bool:
    return message["role"] == "system" and str(message.get("content") or "").startswith(
        "# Memory\n"
    )


def is_context(message: dict[str, Any]) -> bool:
    content = str(message.get("content") or "")
    return message["role"] == "system" and content.rpartition("\n")[2].startswith(TIME.strip())


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
    """The memory sections of a `prompt_of_turn` text: `# Memory` (the system prompt's last
    part) and `# Memory for this message` (the message's context), or "" when there is none."""
    parts = []
    _, found, markdown = prompt.partition(MEMORY_HEADER)
    if found:
        parts.append("# Memory\n\n" + _cut(markdown, RECALLED_HEADER, RELEVANT_HEADER, TIME))
    _, found, recalled = prompt.partition(RECALLED_HEADER)
    if found:
        parts.append(RECALLED_HEADER.strip() + "\n" + _cut(recalled, RELEVANT_HEADER, TIME))
    return "\n\n".join(parts)


def _cut(text: str, *ends: str) -> str:
    for end in ends:
        text = text.partition(end)[0]
    return text


def relevant_section(prompt: str) -> str:
    """The `# Relevant Memory` section (the last part but the time), or "" when none."""
    _, found, section = prompt.partition(RELEVANT_HEADER)
    return "# Relevant Memory\n" + section.partition(TIME)[0] if found else ""


@dataclass(frozen=True)
class ShownHit:
    day: str  # the `## <day>` heading it is under
    text: str  # its lines (the next ones indented), as shown


def relevant_hits(section: str) -> list[ShownHit]:
    """The hits a `# Relevant Memory` section shows, in its order."""
    hits: list[ShownHit] = []
    day = ""
    for line in section.splitlines():
        if line.startswith("## "):
            day = line
        elif line.startswith("- "):
            hits.append(ShownHit(day, line))
        elif line.startswith("  ") and hits:
            hits[-1] = ShownHit(day, f"{hits[-1].text}\n{line}")
    return hits


def session(workspace: Path, key: str = f"telegram:{OWNER}") -> dict[str, Any]:
    """The saved session document of `key` (the owner's private chat by default)."""
    path = workspace / "sessions" / f"{key.replace(':', '_')}.json"
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def new_conversation(workspace: Path, key: str = f"telegram:{OWNER}") -> None:
    """The chat's conversation gone (as after /new): memory is all that holds it now."""
    (workspace / "sessions" / f"{key.replace(':', '_')}.json").unlink()


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
    path = workspace / "sessions" / f"{key.replace(':', '_')}.json"
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


def memory_texts(workspace: Path) -> str:
    """Every MEMORY.md and semantic items file under memory/, joined: where a fact is a fact."""
    root = workspace / "memory"
    found = [*root.rglob("MEMORY.md"), *root.rglob("semantic.jsonl")]
    return "".join(path.read_text() for path in found)


def quoted(workspace: Path) -> str:
    """Every QUOTED.md under memory/, joined: what was kept as others' words."""
    return "".join(path.read_text() for path in (workspace / "memory").rglob("QUOTED.md"))
