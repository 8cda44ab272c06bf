"""A session file that cannot be read: set aside, a fresh start, a log line and a notice."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.app import App
from bot.conversation.continuation import DAMAGED_SESSION
from bot.storage.marks import RECOVERED_FROM
from tests.fakes.openai_api import Fail, FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot
from tests.talk import conversation, say, session, system_text

SESSION = f"telegram_{OWNER}.json"
DAMAGED = {
    "truncated": b'{"version": 1, "key": "telegram:1001", "messages": [{"role": "us',
    "not utf-8": b'{"version": 1, "messages": ["\xff\xfe"]}',
    "not a session": b"[1, 2, 3]",
}


def damage(workspace: Path, content: bytes) -> Path:
    path = workspace / "sessions" / SESSION
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("content", DAMAGED.values(), ids=DAMAGED.keys())
async def test_the_user_hears_it_before_the_reply_and_the_file_is_kept(
    app: App, fake_openai: FakeOpenAI, workspace: Path, content: bytes
) -> None:
    (workspace / "memory" / "MEMORY.md").write_text("Ann likes green tea.\n")
    damage(workspace, content)
    fake_openai.script(Reply("Hi again!"))
    with capture_logs() as logs:
        replies = await say(app, "hello")

    assert replies == [DAMAGED_SESSION, "Hi again!"]
    [aside] = (workspace / "sessions").glob(f"{SESSION}.corrupt-*")
    assert aside.read_bytes() == content
    assert any(e["event"] == "session_corrupt" and e["moved_to"] == str(aside) for e in logs)
    [asked] = conversation(fake_openai.last_request)
    assert asked == {"role": "user", "content": "hello"}
    assert "Ann likes green tea." in system_text(fake_openai.last_request)  # memory is intact
    assert RECOVERED_FROM not in session(workspace)["metadata"]


async def test_the_notice_is_given_once(app: App, fake_openai: FakeOpenAI, workspace: Path) -> None:
    damage(workspace, DAMAGED["truncated"])
    fake_openai.script(Reply("one"), Reply("two"))

    assert await say(app, "first") == [DAMAGED_SESSION, "one"]
    assert await say(app, "second") == ["two"]


async def test_a_failed_turn_does_not_repeat_the_notice(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    damage(workspace, DAMAGED["truncated"])
    fake_openai.script(Fail(500, "upstream exploded", type="server_error"), Reply("back"))

    first = await say(app, "first")
    assert first[0] == DAMAGED_SESSION and len(first) == 2  # then the short error message
    assert await say(app, "second") == ["back"]


async def test_a_command_that_finds_the_damage_leaves_the_notice_for_the_next_turn(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    damage(workspace, DAMAGED["truncated"])
    fake_openai.script(Reply("hello"))

    [status] = await say(app, "/status")
    assert status.startswith("Messages: 0")
    assert await say(app, "hi") == [DAMAGED_SESSION, "hello"]


async def test_over_telegram_the_notice_arrives_first(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "sessions").mkdir(parents=True)
    damage(workspace, DAMAGED["not a session"])
    fake_openai.script(Reply("Hello, Ann."))
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "hi")
        notice, reply = await fake_telegram.wait_for_messages(OWNER, 2)
    assert notice.text == DAMAGED_SESSION
    assert reply.text == "Hello, Ann."
