"""The turn runner: inbox replay, model failures, access, and the typing indicator."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, build_app
from bot.conversation.overflow import MESSAGE_TOO_LONG
from bot.storage.inbox import Inbox
from bot.systems.tool_loop import EMPTY_REPLY
from bot.turn.door import PAIR_LIST, UNCLAIMED
from tests.fakes import openai_api as fake
from tests.fakes.openai_api import Fail, FakeOpenAI, Reply, Step
from tests.harness import API_KEY, FRIEND, OWNER, STRANGER, make_settings
from tests.talk import RecordingReplier, conversation, system_text
from tests.talk import message as message_at

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
SESSION = f"sessions/telegram_{OWNER}.json"
message = partial(message_at, at=NOW)  # every message arrives at NOW


@pytest.fixture
async def make_app(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[Callable[..., App]]:
    apps: list[App] = []

    def make(**overrides: Any) -> App:
        settings = make_settings(workspace, telegram=None, openai=fake_openai, **overrides)
        apps.append(build_app(settings, api_key=API_KEY))
        return apps[-1]

    yield make
    for app in apps:
        await app.aclose()


@pytest.fixture
def app(make_app: Callable[..., App]) -> App:
    return make_app()


@pytest.fixture
def inbox(app: App, workspace: Path) -> Inbox:
    return Inbox(workspace / "state" / "inbox")


def echo(request: dict[str, Any]) -> Reply:
    return Reply(f"answer to {request['messages'][-1]['content']}")


async def test_replay_answers_journaled_messages_in_order_each_in_its_chat(
    app: App, fake_openai: FakeOpenAI, inbox: Inbox
) -> None:
    fake_openai.answer_all(echo)
    for text, user in [("first", OWNER), ("other", FRIEND), ("second", OWNER)]:
        await inbox.accept(message(text, user=user))
    console = message("from the console", user=0, channel="console")
    await inbox.accept(console)
    repliers = {OWNER: RecordingReplier(), FRIEND: RecordingReplier()}

    replayed = await app.router.replay(lambda i: repliers[i.chat_id], channel="telegram")

    assert replayed == 3
    assert repliers[OWNER].sent == ["answer to first", "answer to second"]
    assert repliers[FRIEND].sent == ["answer to other"]
    asked = [r["messages"][-1]["content"] for r in fake_openai.requests]
    assert asked == ["first", "other", "second"]
    second = [m["content"] for m in conversation(fake_openai.requests[2])]
    assert second == ["first", "answer to first", "second"]
    # another channel's entry waits for its channel
    assert [e.inbound for e in await inbox.pending()] == [console]


async def test_a_replayed_message_already_answered_is_resent_from_the_session(
    app: App, fake_openai: FakeOpenAI, inbox: Inbox, workspace: Path
) -> None:
    fake_openai.script(Reply("the saved answer"))
    question = message("question")
    await app.router.handle(question, RecordingReplier())
    await inbox.accept(question)  # a crash came after the session was saved, before the send
    replier = RecordingReplier()

    assert await app.router.replay(lambda _: replier, channel="telegram") == 1

    assert replier.sent == ["the saved answer"]
    assert fake_openai.calls == 1
    assert len(json.loads((workspace / SESSION).read_text())["messages"]) == 2
    assert await inbox.pending() == []


async def test_a_replayed_empty_answer_is_not_mistaken_for_the_previous_turns_reply(
    app: App, fake_openai: FakeOpenAI, inbox: Inbox
) -> None:
    fake_openai.script(Reply("the first answer"), Reply(""))
    await app.router.handle(message("one"), RecordingReplier())
    two = message("two")
    seen = RecordingReplier()
    await app.router.handle(two, seen)
    await inbox.accept(two)  # a crash came after the session was saved, before the send
    replier = RecordingReplier()

    await app.router.replay(lambda _: replier, channel="telegram")

    assert seen.sent == [EMPTY_REPLY]
    assert replier.sent == seen.sent
    assert fake_openai.calls == 2


@pytest.mark.parametrize(
    ("step", "told"),
    [
        (Fail(500, "upstream exploded", type="server_error"), "is overloaded or failing"),
        (Fail(429, "upstream exploded: rate limit", type="rate_limit_error"), "rate-limiting"),
        (Fail(400, "upstream exploded: bad request"), "refused this request"),
    ],
    ids=["500", "429", "400"],
)
async def test_a_model_failure_tells_the_user_and_leaves_the_session_alone(
    app: App,
    fake_openai: FakeOpenAI,
    inbox: Inbox,
    workspace: Path,
    step: Step,
    told: str,
) -> None:
    fake_openai.script(Reply("first answer"), step)
    await app.router.handle(message("one"), RecordingReplier())
    session_before = (workspace / SESSION).read_bytes()
    replier = RecordingReplier()

    await app.router.handle(message("two"), replier)

    [reply] = replier.sent
    assert told in reply  # the owner's words (`bot.llm.failures`; tests/test_model_failures.py)
    assert (workspace / SESSION).read_bytes() == session_before
    assert await inbox.pending() == []


async def test_an_overflow_with_nothing_to_compact_is_tried_once_more_then_told(
    app: App, fake_openai: FakeOpenAI, inbox: Inbox, workspace: Path
) -> None:
    fake_openai.script(Reply("first answer"), fake.ContextOverflow(), fake.ContextOverflow())
    await app.router.handle(message("one"), RecordingReplier())
    session_before = (workspace / SESSION).read_bytes()
    replier = RecordingReplier()

    await app.router.handle(message("two"), replier)

    assert replier.sent == [MESSAGE_TOO_LONG]
    assert (workspace / SESSION).read_bytes() == session_before
    assert await inbox.pending() == []


async def test_a_stranger_is_refused_once_and_never_reaches_the_model(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    replier = RecordingReplier()

    for text in ("let me in", "/status", "please"):
        await app.router.handle(message(text, user=STRANGER), replier)

    [notice] = replier.sent  # one notice, with their id (the pairing code: test_pairing.py)
    assert f"Telegram id: {STRANGER}" in notice
    assert replier.typing_entries == 0
    assert fake_openai.calls == 0
    assert list((workspace / "sessions").iterdir()) == []
    assert list((workspace / "state" / "inbox").iterdir()) == []


async def test_the_console_user_is_an_owner_even_when_no_owners_are_configured(
    make_app: Callable[..., App], fake_openai: FakeOpenAI, workspace: Path
) -> None:
    app = make_app(owner_ids=(), allowed_user_ids=())
    (workspace / "memory" / "MEMORY.md").write_text("The owner's secret plan.")
    fake_openai.script(Reply("hello, owner"))
    console, telegram = RecordingReplier(), RecordingReplier()

    await app.router.handle(message("hi", user=0, channel="console"), console)
    await app.router.handle(message("hi", user=OWNER), telegram)

    assert console.sent == ["hello, owner"]
    assert "The owner's secret plan." in system_text(fake_openai.requests[0])
    # empty lists mean the owners only, never everybody: the bot waits to be claimed
    assert telegram.sent == [UNCLAIMED.format(user_id=OWNER, pair_list=PAIR_LIST)]


async def test_typing_is_shown_for_a_model_turn_but_not_for_a_command(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("hi"))
    turn, command = RecordingReplier(), RecordingReplier()

    await app.router.handle(message("hello"), turn)
    await app.router.handle(message("/status"), command)

    assert (turn.sent, turn.typing_entries) == (["hi"], 1)
    assert (len(command.sent), command.typing_entries) == (1, 0)
