"""Groups that know who spoke: names before every group message, the chatter not addressed to
the bot kept and shown once, the daily note's names; private chats as they were."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from bot.app import App
from bot.models import Inbound
from tests.fakes.openai_api import Fail, FakeOpenAI, Reply
from tests.harness import FRIEND, OWNER, STRANGER, make_settings, started_app
from tests.talk import GROUP, GROUP_DIR, RecordingReplier, conversation, handle, message
from tests.talk import system_text as context_of

CHATTER = "# Said in the group"


def group(
    text: str, app: App, *, user: int = OWNER, name: str = "Ann", to_bot: bool = True
) -> Inbound:
    """A message in the group from `name` (to the bot, or chatter among its members)."""
    said = message(text, at=app.now(), user=user, chat=GROUP)
    return replace(said, user_name=name, addressed=to_bot)


def files_holding(workspace: Path, text: str) -> list[Path]:
    found = (p for p in workspace.rglob("*") if p.is_file())
    return [p for p in found if text.encode() in p.read_bytes()]


async def test_the_model_sees_who_said_each_group_message(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hi Ann"), Reply("Hi Bob"))

    assert await handle(app, group("hello there", app)) == ["Hi Ann"]
    assert await handle(app, group("and me?", app, user=FRIEND, name="Bob")) == ["Hi Bob"]

    said = [(m["role"], m["content"]) for m in conversation(fake_openai.requests[-1])]
    assert said == [
        ("user", "Ann: hello there"),
        ("assistant", "Hi Ann"),
        ("user", "Bob: and me?"),
    ]


async def test_a_private_message_reaches_the_model_as_written(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))

    await handle(app, replace(message("hello there", at=app.now()), user_name="Ann"))

    assert fake_openai.requests[-1]["messages"][-1] == {"role": "user", "content": "hello there"}
    assert CHATTER not in context_of(fake_openai.requests[-1])


async def test_chatter_is_kept_and_shown_once_the_next_time_the_bot_is_addressed(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    assert await handle(app, group("lunch at noon?", app, to_bot=False)) == []
    assert (
        await handle(app, group("I'll bring\npizza", app, user=FRIEND, name="Bob", to_bot=False))
        == []
    )
    assert fake_openai.calls == 0  # chatter starts no turn

    fake_openai.script(Reply("Noon, with pizza."), Reply("You're welcome."))
    assert await handle(app, group("so what's the plan?", app)) == ["Noon, with pizza."]
    assert await handle(app, group("thanks", app)) == ["You're welcome."]

    first, second = (context_of(request) for request in fake_openai.requests)
    assert f"{CHATTER}\n" in first
    assert "\nAnn: lunch at noon?\nBob: I'll bring pizza\n" in first
    assert CHATTER not in second and "lunch at noon?" not in second
    assert not list((workspace / "state" / "chatter").glob("*.json"))


async def test_chatter_outlives_a_turn_that_failed(app: App, fake_openai: FakeOpenAI) -> None:
    await handle(app, group("lunch at noon?", app, to_bot=False))
    fake_openai.script(Fail(500, "upstream exploded", type="server_error"), Reply("Noon."))

    [failed] = await handle(app, group("what's the plan?", app))
    assert "try again" in failed.lower()
    assert await handle(app, group("and now?", app)) == ["Noon."]

    assert "Ann: lunch at noon?" in context_of(fake_openai.requests[-1])


async def test_chatter_from_someone_the_bot_does_not_talk_to_is_dropped_silently(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    stranger = group("my code is hunter2", app, user=STRANGER, name="Eve", to_bot=False)
    assert app.router.ignores(stranger)  # never journaled
    assert not app.router.ignores(group("hi all", app, to_bot=False))
    replier = RecordingReplier()
    await app.router.handle(stranger, replier)
    assert (replier.sent, replier.acknowledged) == ([], 0)
    assert files_holding(workspace, "hunter2") == []

    fake_openai.script(Reply("Nothing new."))
    await handle(app, group("anything new?", app))
    assert "hunter2" not in json.dumps(fake_openai.requests[0])

    # the door still tells them once, when they do address the bot
    [notice] = await handle(app, group("let me in", app, user=STRANGER, name="Eve"))
    assert "write to me in private" in notice


async def test_the_group_daily_note_records_who_said_what(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("At noon."))

    await handle(app, group("when is lunch?", app, name="Ann Lee"))

    [note] = (workspace / "memory" / GROUP_DIR).glob("????-??-??.md")
    assert "User: Ann Lee: when is lunch? | Assistant: At noon." in note.read_text()


async def test_a_turn_is_acknowledged_and_chatter_and_commands_are_not(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))
    counts = []
    for inbound in (
        group("hi", app),
        group("just chatting", app, to_bot=False),
        group("/status", app),
    ):
        replier = RecordingReplier()
        await app.router.handle(inbound, replier)
        counts.append(replier.acknowledged)

    assert counts == [1, 0, 0]


async def test_a_name_with_line_breaks_is_one_line_and_no_name_is_the_id(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"), Reply("ok"))

    await handle(app, group("hi", app, name="Ann\nSYSTEM"))
    await handle(app, replace(group("me too", app, user=FRIEND), user_name=None))

    said = [m["content"] for m in conversation(fake_openai.requests[-1]) if m["role"] == "user"]
    assert said == ["Ann SYSTEM: hi", f"user {FRIEND}: me too"]


async def test_no_chatter_is_kept_when_it_is_turned_off(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(workspace, telegram=None, openai=fake_openai)
    telegram = settings.telegram.model_copy(update={"group_chatter_messages": 0})
    fake_openai.script(Reply("ok"))
    async with started_app(settings.model_copy(update={"telegram": telegram})) as app:
        chatter = group("lunch at noon?", app, to_bot=False)
        assert app.router.ignores(chatter)
        assert await handle(app, chatter) == []
        await handle(app, group("what's the plan?", app))

    assert "lunch at noon" not in json.dumps(fake_openai.requests[0])
    assert not (workspace / "state" / "chatter").exists()


async def test_forget_reaches_the_chatter_waiting_for_the_next_turn(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    assert await handle(app, group("the alarm code is 4711", app, to_bot=False)) == []
    assert (
        await handle(app, group("see you at six", app, user=FRIEND, name="Bob", to_bot=False)) == []
    )

    [receipt] = await handle(app, group("/forget 4711", app))
    fake_openai.script(Reply("Six it is."))
    assert await handle(app, group("when do we meet?", app)) == ["Six it is."]

    assert "group chatter 1" in receipt and "the alarm code is 4711" in receipt
    shown = context_of(fake_openai.requests[-1])
    assert "Bob: see you at six" in shown and "4711" not in shown
    assert files_holding(workspace / "state" / "chatter", "4711") == []
