"""Session freshness: daily boundary and idle expiry (each kind of chat may have its own),
announced, summarised, archived; reset triggers that act as /new."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.app import App
from bot.conversation import compaction
from bot.conversation.renewal import (
    NO_SUMMARY,
    Freshness,
    FreshnessPolicy,
    chat_kind,
    duration_phrase,
)
from bot.memory.upkeep.consolidation import Consolidator
from bot.memory.upkeep.requests import ROLE as CONSOLIDATION_ROLE
from bot.models import ChatMessage, Session
from bot.settings import FreshnessSettings, SessionPolicySettings, Settings
from tests.fakes.openai_api import Fail, FakeOpenAI, Hang, Reply, Respond, Step
from tests.harness import make_settings, started_app
from tests.talk import GROUP, conversation, say, session, write_session

BERLIN = ZoneInfo("Europe/Berlin")
OLD_TALK = [
    {"role": "user", "content": "I'm planning a trip to Lisbon in May."},
    {"role": "assistant", "content": "Lovely! Trams and pastéis de nata."},
]
SUMMARY = "Ann plans a trip to Lisbon in May."
CONSOLIDATED = json.dumps({"history_entry": "[2026-11-21 04:00] Ann plans a Lisbon trip."})
IDLE_NOTICE = "New conversation (idle for 5 hours). I carried a summary of our last one over."


# ----------------------------------------------------------------------------- the policy


def berlin(month: int, day: int, hour: int, minute: int) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=BERLIN)


def stale_session(updated_at: datetime, *messages: ChatMessage) -> Session:
    said = messages or (ChatMessage(role="user", content="hi"),)
    return Session(key="k", messages=said, created_at=updated_at, updated_at=updated_at)


def policy(now: datetime, *, hour: int | None = None, idle: int | None = None) -> FreshnessPolicy:
    return FreshnessPolicy(daily_reset_hour=hour, idle_minutes=idle, now=lambda: now)


def test_both_off_a_session_never_expires() -> None:
    now = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
    assert policy(now).expired(stale_session(now - timedelta(days=400))) is None


def test_an_empty_session_never_expires() -> None:
    now = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
    summary_only = ChatMessage(role="system", content="[Conversation summary]\nold")
    strict = policy(now, hour=4, idle=1)
    long_ago = now - timedelta(days=3)
    assert strict.expired(Session("k", (), created_at=long_ago, updated_at=long_ago)) is None
    assert strict.expired(stale_session(long_ago, summary_only)) is None
    assert strict.expired(stale_session(long_ago)) is not None


@pytest.mark.parametrize(
    ("idle_for", "expected"),
    [
        (timedelta(minutes=239), None),
        (timedelta(minutes=241), "idle for 4 hours"),
        (timedelta(hours=5, minutes=20), "idle for 5 hours"),
        (timedelta(days=3, hours=2), "idle for 3 days"),
    ],
)
def test_idle_expiry(idle_for: timedelta, expected: str | None) -> None:
    now = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
    assert policy(now, idle=240).expired(stale_session(now - idle_for)) == expected


@pytest.mark.parametrize(
    ("now", "updated", "stale"),
    [
        # after today's 04:00: anything before it is stale
        (berlin(11, 21, 9, 0), berlin(11, 21, 3, 59), True),
        (berlin(11, 21, 9, 0), berlin(11, 21, 4, 1), False),
        # before today's 04:00: the boundary is yesterday's
        (berlin(11, 21, 3, 0), berlin(11, 20, 5, 0), False),
        (berlin(11, 21, 3, 0), berlin(11, 20, 3, 59), True),
        # the day summer time starts (02:00 → 03:00): still 04:00 on the wall clock
        (berlin(3, 29, 4, 30), berlin(3, 29, 3, 30), True),
        (berlin(3, 29, 4, 30), berlin(3, 29, 4, 10), False),
    ],
)
def test_daily_boundary_in_the_clocks_time_zone(
    now: datetime, updated: datetime, stale: bool
) -> None:
    stored = updated.astimezone(UTC)  # sessions may be saved in another zone
    reason = policy(now, hour=4).expired(stale_session(stored))
    assert reason == ("daily reset at 04:00" if stale else None)


def test_durations_read_naturally() -> None:
    assert duration_phrase(timedelta(minutes=1)) == "1 minute"
    assert duration_phrase(timedelta(minutes=45)) == "45 minutes"
    assert duration_phrase(timedelta(hours=5, minutes=59)) == "5 hours"
    assert duration_phrase(timedelta(hours=50)) == "2 days"


# ----------------------------------------------------------------------------- through the app


@asynccontextmanager
async def app_with(workspace: Path, fake: FakeOpenAI, **policy: Any) -> AsyncIterator[App]:
    """The app; with no `policy`, the session settings are the committed defaults."""
    overrides: dict[str, Any] = {"session": SessionPolicySettings(**policy)} if policy else {}
    settings = make_settings(workspace, telegram=None, openai=fake, **overrides)
    async with started_app(settings) as app:
        yield app


def two_hours_back() -> int:
    """A boundary hour whose last occurrence was 2 to 3 hours ago (the app's zone is UTC)."""
    return (datetime.now(UTC).hour - 2) % 24


def kind(request: dict[str, Any]) -> str:
    """Which part of the bot is asking: "summary", "consolidation" or "turn"."""
    first = str(request["messages"][0]["content"])
    if first.startswith(compaction.ROLE[:30]):
        return "summary"
    return "consolidation" if first == CONSOLIDATION_ROLE else "turn"


def by_kind(**steps: Step) -> Respond:
    """One scripted call, answered by what kind of request it turns out to be."""
    return Respond(lambda request: steps[kind(request)])


def requests_of(fake: FakeOpenAI, wanted: str) -> list[dict[str, Any]]:
    return [r for r in fake.requests if kind(r) == wanted]


async def consolidated(app: App) -> None:
    """Until the background consolidation has finished its queue."""
    for service in app.services:
        if isinstance(service, Consolidator):
            await service.wait_idle()


async def test_idle_expiry_announces_summarises_consolidates_and_archives(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    working = workspace / "memory" / "working" / "telegram%3A1001.md"
    working.parent.mkdir(parents=True)
    working.write_text("Comparing flights.\n")
    steps = by_kind(summary=Reply(SUMMARY), consolidation=Reply(CONSOLIDATED), turn=Reply("Hi!"))
    fake_openai.script(steps, steps, steps)
    async with app_with(workspace, fake_openai, idle_minutes=240) as app:
        write_session(workspace, OLD_TALK, updated_at=app.now() - timedelta(hours=5, minutes=1))

        assert await say(app, "good morning") == [IDLE_NOTICE, "Hi!"]
        await consolidated(app)

    [turn] = requests_of(fake_openai, "turn")
    assert conversation(turn) == [
        {"role": "system", "content": f"[Conversation summary]\n{SUMMARY}"},
        {"role": "user", "content": "good morning"},
    ]
    [asked] = requests_of(fake_openai, "summary")
    assert "trip to Lisbon" in asked["messages"][-1]["content"]
    [archived] = (workspace / "sessions" / "archive").glob("*.json")
    assert json.loads(archived.read_text())["messages"] == OLD_TALK
    saved = session(workspace)["messages"]
    assert [m["content"] for m in saved] == [
        f"[Conversation summary]\n{SUMMARY}",
        "good morning",
        "Hi!",
    ]
    assert "Ann plans a Lisbon trip." in (workspace / "memory" / "HISTORY.md").read_text()
    assert not working.exists()


async def test_the_turn_does_not_wait_for_the_consolidation(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    steps = by_kind(
        summary=Reply(SUMMARY), consolidation=Hang(then=Reply(CONSOLIDATED)), turn=Reply("Hi!")
    )
    fake_openai.script(steps, steps, steps)
    async with app_with(workspace, fake_openai, idle_minutes=60) as app:
        write_session(workspace, OLD_TALK, updated_at=app.now() - timedelta(hours=2))

        replies = await say(app, "hello")

        assert fake_openai.hanging == 1  # the consolidation is still waiting for the model
        assert replies[-1] == "Hi!"
        jobs = list((workspace / "state" / "consolidation").glob("*.json"))
        assert len(jobs) == 1 and "trip to Lisbon" in jobs[0].read_text()  # durable meanwhile
        fake_openai.release()
        await consolidated(app)
    assert "Ann plans a Lisbon trip." in (workspace / "memory" / "HISTORY.md").read_text()


async def test_a_crossed_daily_boundary_starts_a_new_conversation(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    steps = by_kind(summary=Reply(SUMMARY), consolidation=Reply(CONSOLIDATED), turn=Reply("Hi!"))
    fake_openai.script(steps, steps, steps)
    hour = two_hours_back()
    async with app_with(workspace, fake_openai, daily_reset_hour=hour) as app:
        write_session(workspace, OLD_TALK, updated_at=app.now() - timedelta(hours=4))

        replies = await say(app, "hello")
        await consolidated(app)

    assert replies == [
        f"New conversation (daily reset at {hour:02d}:00). "
        "I carried a summary of our last one over.",
        "Hi!",
    ]
    assert len(list((workspace / "sessions" / "archive").glob("*.json"))) == 1


@pytest.mark.parametrize(
    "policy",
    [{}, {"daily_reset_hour": "BOUNDARY"}],
    ids=["both-off-by-default", "boundary-not-crossed"],
)
async def test_a_fresh_session_just_goes_on(
    workspace: Path, fake_openai: FakeOpenAI, policy: dict[str, Any]
) -> None:
    fake_openai.script(Reply("Still here."))
    if policy.get("daily_reset_hour") == "BOUNDARY":
        policy = {"daily_reset_hour": two_hours_back()}
    async with app_with(workspace, fake_openai, **policy) as app:
        ago = timedelta(hours=1) if "daily_reset_hour" in policy else timedelta(days=30)
        write_session(workspace, OLD_TALK, updated_at=app.now() - ago)

        assert await say(app, "and hotels?") == ["Still here."]

    assert conversation(fake_openai.last_request) == [
        *OLD_TALK,
        {"role": "user", "content": "and hotels?"},
    ]
    assert not (workspace / "sessions" / "archive").exists()


def test_both_policies_are_off_in_the_committed_config() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.session.daily_reset_hour is None
    assert settings.session.idle_minutes is None


async def test_without_a_summary_the_last_messages_are_carried_over(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    failed = Fail(500, "upstream exploded", type="server_error")
    steps = by_kind(summary=failed, consolidation=Reply(CONSOLIDATED), turn=Reply("Hi!"))
    fake_openai.script(steps, steps, steps)
    async with app_with(workspace, fake_openai, idle_minutes=240) as app:
        write_session(workspace, OLD_TALK, updated_at=app.now() - timedelta(hours=6))

        notice, reply = await say(app, "good morning")
        assert reply == "Hi!"
        await consolidated(app)

    assert notice == (
        "New conversation (idle for 6 hours). I couldn't summarise our last one, "
        "so I carried its last messages over."
    )
    [turn] = requests_of(fake_openai, "turn")
    carried = turn["messages"][1]
    assert carried["role"] == "system"
    assert carried["content"].startswith(f"[Conversation summary]\n{NO_SUMMARY}")
    assert "USER: I'm planning a trip to Lisbon in May." in carried["content"]
    assert "ASSISTANT: Lovely!" in carried["content"]


async def test_the_new_conversation_is_announced_once(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    steps = by_kind(summary=Reply(SUMMARY), consolidation=Reply(CONSOLIDATED), turn=Reply("Hi!"))
    fake_openai.script(steps, steps, steps, Reply("Again."))
    async with app_with(workspace, fake_openai, idle_minutes=240) as app:
        write_session(workspace, OLD_TALK, updated_at=app.now() - timedelta(hours=5))
        assert len(await say(app, "one")) == 2
        await consolidated(app)

        assert await say(app, "two") == ["Again."]


async def test_a_failed_first_turn_keeps_the_new_conversation_and_its_summary(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    failed = Fail(500, "upstream exploded", type="server_error")
    steps = by_kind(summary=Reply(SUMMARY), consolidation=Reply(CONSOLIDATED), turn=failed)
    fake_openai.script(steps, steps, steps, Reply("Back."))
    async with app_with(workspace, fake_openai, idle_minutes=240) as app:
        write_session(workspace, OLD_TALK, updated_at=app.now() - timedelta(hours=5))
        notice, _error = await say(app, "one")
        await consolidated(app)

        assert await say(app, "two") == ["Back."]

    assert notice == IDLE_NOTICE
    assert conversation(fake_openai.last_request) == [
        {"role": "system", "content": f"[Conversation summary]\n{SUMMARY}"},
        {"role": "user", "content": "two"},
    ]


# ----------------------------------------------------------------- per kind of chat, triggers


@pytest.mark.parametrize(
    ("key", "kind_of_chat"),
    [
        ("telegram:1001", "private"),
        ("telegram:-100500", "group"),
        ("telegram:-100600:7", "topic"),
        ("console:local", "private"),
    ],
)
def test_a_session_key_names_its_kind_of_chat(key: str, kind_of_chat: str) -> None:
    assert chat_kind(key) == kind_of_chat


def test_a_kind_of_chat_may_have_its_own_freshness() -> None:
    now = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
    rules = FreshnessPolicy(
        daily_reset_hour=None,
        idle_minutes=600,
        now=lambda: now,
        by_kind={"group": Freshness(daily_reset_hour=None, idle_minutes=60)},
    )
    two_hours = now - timedelta(hours=2)

    def aged(key: str) -> Session:
        return Session(
            key, (ChatMessage("user", "hi"),), created_at=two_hours, updated_at=two_hours
        )

    assert rules.expired(aged("telegram:-100500")) == "idle for 2 hours"
    assert rules.expired(aged("telegram:1001")) is None  # the general 600 minutes
    assert rules.expired(aged("telegram:-100600:7")) is None


async def test_a_group_setting_renews_the_group_and_leaves_private_chats(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    steps = by_kind(summary=Reply(SUMMARY), consolidation=Reply(CONSOLIDATED), turn=Reply("Hi!"))
    fake_openai.script(steps, steps, steps, Reply("Still here."))
    chats = {"group": FreshnessSettings(idle_minutes=60)}
    async with app_with(workspace, fake_openai, chats=chats) as app:
        ago = app.now() - timedelta(hours=2)
        write_session(workspace, OLD_TALK, updated_at=ago, key=f"telegram:{GROUP}")
        write_session(workspace, OLD_TALK, updated_at=ago)

        in_group = await say(app, "hello all", chat=GROUP, chat_type="group")
        in_private = await say(app, "and hotels?")
        await consolidated(app)

    assert in_group[0].startswith("New conversation (idle for 2 hours)")
    assert in_private == ["Still here."]


async def test_a_reset_trigger_starts_a_new_conversation_as_new_does(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(CONSOLIDATED))
    async with app_with(workspace, fake_openai, reset_triggers=("new chat", "start over")) as app:
        write_session(workspace, OLD_TALK, updated_at=app.now() - timedelta(minutes=5))

        [reply] = await say(app, "New chat!")

    assert "new" in reply.lower()
    [archived] = (workspace / "sessions" / "archive").glob("*.json")
    assert json.loads(archived.read_text())["messages"] == OLD_TALK
    assert json.loads(archived.read_text())["metadata"]["ended"] == "/new"
    assert session(workspace)["messages"] == []
