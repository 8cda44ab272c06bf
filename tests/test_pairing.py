"""Pairing: a stranger's one notice (id and code), the owner told, /pair and /unpair, the
limits, and `python -m bot pair` — through the real app, against the fake Telegram and model."""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, build_app
from bot.media.photo import UNSEEN
from bot.turn.door import (
    FULL,
    GROUP,
    PAIRING_OFF,
    REFUSAL,
    UNKNOWN_CODE,
    UNPAIR_USAGE,
    WELCOME,
)
from bot.turn.pairing import ALPHABET, MAX_PENDING
from tests.clock import Clock
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import (
    API_KEY,
    FRIEND,
    OWNER,
    REPO,
    STRANGER,
    make_settings,
    run_bot_command,
    running_bot,
)
from tests.talk import RecordingReplier, message

START = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)
CODE = re.compile(rf"pairing code: ([{ALPHABET}]{{4}}-[{ALPHABET}]{{4}})")
MakeApp = Callable[..., Awaitable[App]]  # make_app(pairing=...)


class Chats:
    """Every chat's replies, and the door's way to a private chat (`Reach`)."""

    def __init__(self) -> None:
        self.repliers: defaultdict[int, RecordingReplier] = defaultdict(RecordingReplier)

    def __call__(self, chat_id: int) -> RecordingReplier:
        return self.repliers[chat_id]

    def sent(self, chat_id: int) -> list[str]:
        return self.repliers[chat_id].sent


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def chats() -> Chats:
    return Chats()


@pytest.fixture
async def make_app(
    workspace: Path, fake_openai: FakeOpenAI, clock: Clock
) -> AsyncIterator[MakeApp]:
    """A started app on `clock`; another call gives a fresh app over the same workspace."""
    apps: list[App] = []

    async def make(*, pairing: bool = True) -> App:
        settings = make_settings(workspace, telegram=None, openai=fake_openai)
        telegram = settings.telegram.model_copy(update={"pairing": pairing})
        settings = settings.model_copy(update={"telegram": telegram})
        apps.append(build_app(settings, api_key=API_KEY, now=clock))
        await apps[-1].start()
        return apps[-1]

    yield make
    for app in apps:
        await app.aclose()


@pytest.fixture
async def app(make_app: MakeApp) -> App:
    return await make_app()


async def send(app: App, chats: Chats, text: str, *, user: int, chat: int | None = None) -> None:
    inbound = message(text, at=app.now(), user=user, chat=chat)
    await app.router.handle(inbound, chats(inbound.chat_id), chats)


async def ask(app: App, chats: Chats, user: int) -> str:
    """A stranger writes; the code in the notice they got."""
    await send(app, chats, "hello?", user=user)
    found = CODE.search(chats.sent(user)[-1])
    assert found, chats.sent(user)
    return found.group(1)


def roster(workspace: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((workspace / "state" / "paired.json").read_text())
    return document


# ----------------------------------------------------------------------------- the whole bot


async def test_a_stranger_gets_one_notice_however_much_they_send_and_the_owner_is_told(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(STRANGER, STRANGER, "hi, who are you?", first_name="Bob")
        fake_telegram.push_media(STRANGER, STRANGER, "sticker", first_name="Bob")
        fake_telegram.push_media(STRANGER, STRANGER, "photo", first_name="Bob")
        fake_telegram.push_media(STRANGER, STRANGER, "voice", first_name="Bob")
        fake_telegram.push_text(STRANGER, STRANGER, "/start", first_name="Bob")
        fake_telegram.push_text(STRANGER, STRANGER, "/pair", first_name="Bob")
        fake_telegram.push_text(
            STRANGER, STRANGER, "hello??", first_name="Bob", reply_to_message_id=1
        )
        [notice] = await fake_telegram.wait_for_messages(STRANGER, 1)
        fake_telegram.push_media(STRANGER + 1, STRANGER + 1, "sticker")  # a sticker alone
        [sticker_notice] = await fake_telegram.wait_for_messages(STRANGER + 1, 1)
        told_both = await fake_telegram.wait_for_messages(OWNER, 2)
        fake_telegram.push_media(OWNER, OWNER, "photo")  # the owner's photo: not the door's
        fake_openai.script(Reply("hi owner"))
        fake_telegram.push_text(OWNER, OWNER, "still there?")
        *_, photo, hi = await fake_telegram.wait_for_messages(OWNER, 4)

    assert len(fake_telegram.sent_messages(STRANGER)) == 1
    assert CODE.search(sticker_notice.text)
    found = CODE.search(notice.text)
    assert found and f"Telegram id: {STRANGER}" in notice.text
    code = found.group(1)
    told = next(m for m in told_both if "Bob" in m.text)
    unseen = UNSEEN.format(model="fake-model", name="").split(" I kept")[0]
    assert (photo.text.split(" I kept")[0], hi.text) == (unseen, "hi owner")
    assert f"Bob (Telegram id {STRANGER})" in told.text and f"/pair {code}" in told.text
    assert fake_openai.calls == 1  # the owner's message only
    assert "who are you" not in json.dumps(fake_openai.requests)
    assert not list((workspace / "sessions").glob(f"*{STRANGER}*"))
    assert not list((workspace / "memory").glob(f"**/*{STRANGER}*"))
    assert list((workspace / "state" / "inbox").iterdir()) == []
    pending = roster(workspace)["pending"][0]
    assert (pending["code"], pending["user_id"], pending["name"]) == (
        code.replace("-", ""),
        STRANGER,
        "Bob",
    )


async def test_pair_lets_them_in_tells_them_and_holds_after_a_restart(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(STRANGER, STRANGER, "let me in", first_name="Bob")
        [notice] = await fake_telegram.wait_for_messages(STRANGER, 1)
        found = CODE.search(notice.text)
        assert found
        fake_telegram.push_text(OWNER, OWNER, f"/pair {found.group(1).lower()}")
        [_, paired] = await fake_telegram.wait_for_messages(OWNER, 2)
        [_, welcome] = await fake_telegram.wait_for_messages(STRANGER, 2)
        fake_openai.script(Reply("hello Bob"))
        fake_telegram.push_text(STRANGER, STRANGER, "thanks!", first_name="Bob")
        await fake_telegram.wait_for_messages(STRANGER, 3)
    fake_openai.script(Reply("welcome back"))
    async with running_bot(settings, fake_telegram):  # a fresh app over the same workspace
        fake_telegram.push_text(STRANGER, STRANGER, "me again", first_name="Bob")
        replies = await fake_telegram.wait_for_messages(STRANGER, 4)

    assert paired.text.startswith(f"Paired: Bob (id {STRANGER}) can talk to me now.")
    assert welcome.text == WELCOME
    assert [m.text for m in replies[2:]] == ["hello Bob", "welcome back"]
    assert fake_openai.requests[-1]["messages"][-1]["content"] == "me again"
    assert fake_openai.calls == 2


# ----------------------------------------------------------------------------- codes and limits


async def test_a_wrong_code_is_refused_and_lets_nobody_in(
    app: App, chats: Chats, workspace: Path
) -> None:
    await ask(app, chats, STRANGER)

    await send(app, chats, "/pair ABCD-2345", user=OWNER)

    assert chats.sent(OWNER)[-1] == UNKNOWN_CODE.format(code="ABCD-2345")
    assert roster(workspace)["paired"] == []
    assert not app.router.access.allows(STRANGER)


async def test_an_expired_code_is_refused_and_the_stranger_may_ask_again(
    app: App, chats: Chats, clock: Clock
) -> None:
    old = await ask(app, chats, STRANGER)
    clock.at = START + timedelta(minutes=59)
    await send(app, chats, "anyone?", user=STRANGER)
    assert len(chats.sent(STRANGER)) == 1  # still waiting: nothing more

    clock.at = START + timedelta(minutes=61)
    await send(app, chats, f"/pair {old}", user=OWNER)
    new = await ask(app, chats, STRANGER)

    assert chats.sent(OWNER)[-2].startswith(f"The code {old} has expired.")
    assert not app.router.access.allows(STRANGER)
    assert new != old and len(chats.sent(STRANGER)) == 2
    await send(app, chats, f"/pair {new}", user=OWNER)
    assert app.router.access.allows(STRANGER)


async def test_at_most_three_requests_wait_and_a_fourth_stranger_hears_once_to_try_later(
    app: App, chats: Chats, clock: Clock
) -> None:
    strangers = [STRANGER + n for n in range(MAX_PENDING + 1)]
    codes = [await ask(app, chats, user) for user in strangers[:MAX_PENDING]]
    late = strangers[-1]

    for text in ("hello?", "hello??", "/start"):
        await send(app, chats, text, user=late)

    assert chats.sent(late) == [FULL.format(ttl="1 hour", user_id=late)]
    assert len(chats.sent(OWNER)) == MAX_PENDING  # told of the three requests only
    await send(app, chats, f"/pair {codes[0]}", user=OWNER)
    clock.at = START + timedelta(minutes=61)  # an hour after "try later"
    assert CODE.search(await _last(app, chats, late))


async def _last(app: App, chats: Chats, user: int) -> str:
    await send(app, chats, "me again", user=user)
    return chats.sent(user)[-1]


async def test_pair_alone_lists_the_requests_waiting_and_who_is_paired(
    app: App, chats: Chats, clock: Clock
) -> None:
    first = await ask(app, chats, STRANGER)
    clock.at = START + timedelta(minutes=20)
    second = await ask(app, chats, STRANGER + 1)
    await send(app, chats, f"/pair {first}", user=OWNER)

    await send(app, chats, "/pair", user=OWNER)

    listing = chats.sent(OWNER)[-1]
    assert f"id {STRANGER + 1}: /pair {second} (1 hour left)" in listing
    assert first not in listing
    assert f"Paired: someone (id {STRANGER})" in listing


async def test_unpair_shuts_a_paired_user_out_but_never_an_owner(
    app: App, chats: Chats, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    code = await ask(app, chats, STRANGER)
    await send(app, chats, f"/pair {code}", user=OWNER)

    await send(app, chats, f"/unpair {STRANGER}", user=OWNER)
    await send(app, chats, f"/unpair {OWNER}", user=OWNER)
    await send(app, chats, f"/unpair {FRIEND}", user=OWNER)
    await send(app, chats, "/unpair bob", user=OWNER)

    unpaired, owner, friend, usage = chats.sent(OWNER)[-4:]
    assert unpaired.startswith(f"Unpaired someone (id {STRANGER})")
    assert owner == f"{OWNER} is an owner; owners cannot be unpaired."
    assert "BOT_TELEGRAM__ALLOWED_USER_IDS" in friend
    assert usage == UNPAIR_USAGE
    assert roster(workspace)["paired"] == []
    assert CODE.search(await _last(app, chats, STRANGER))  # a stranger again: a new request
    assert fake_openai.calls == 0


async def test_only_an_owner_may_pair_or_unpair(app: App, chats: Chats, workspace: Path) -> None:
    code = await ask(app, chats, STRANGER)
    other = STRANGER + 1

    await send(app, chats, f"/pair {code}", user=FRIEND)
    await send(app, chats, f"/unpair {STRANGER}", user=FRIEND)
    await send(app, chats, f"/pair {code}", user=other)  # a stranger: their own request instead
    await send(app, chats, f"/pair {code}", user=OWNER, chat=-100500)  # the owner, in a group

    assert chats.sent(FRIEND) == ["Only my owner can use /pair.", "Only my owner can use /unpair."]
    assert CODE.search(chats.sent(other)[0])
    assert chats.sent(-100500) == ["Use /pair in our private chat."]
    assert roster(workspace)["paired"] == []
    assert not app.router.access.allows(STRANGER)


async def test_a_stranger_in_a_group_is_told_once_to_write_in_private(
    app: App, chats: Chats, workspace: Path
) -> None:
    for text in ("@mnemo hi", "@mnemo hello?"):
        await send(app, chats, text, user=STRANGER, chat=-100500)

    assert chats.sent(-100500) == [GROUP]
    assert chats.sent(OWNER) == []
    assert not (workspace / "state" / "paired.json").exists()


async def test_with_pairing_off_a_stranger_is_refused_once_and_no_code_is_made(
    make_app: MakeApp, chats: Chats, workspace: Path
) -> None:
    app = await make_app(pairing=False)
    for text in ("hi", "hi?"):
        await send(app, chats, text, user=STRANGER)
    await send(app, chats, "/pair", user=OWNER)

    assert chats.sent(STRANGER) == [REFUSAL.format(user_id=STRANGER)]
    assert chats.sent(OWNER) == [PAIRING_OFF]
    assert not (workspace / "state" / "paired.json").exists()


async def test_a_damaged_roster_is_never_overwritten_and_the_owner_hears_why(
    app: App, chats: Chats, workspace: Path
) -> None:
    path = workspace / "state" / "paired.json"
    path.write_text('{"version": 1, "paired": [{"id": ')

    await send(app, chats, "/pair ABCD2345", user=OWNER)

    [answer] = chats.sent(OWNER)
    assert answer.startswith("I could not save that: state/paired.json cannot be read (")
    assert answer.endswith("fix it, or move it aside to start over (claimed owners and paired "
                           "users are then forgotten)")  # fmt: skip
    assert path.read_text() == '{"version": 1, "paired": [{"id": '


# ----------------------------------------------------------------------------- from a shell


async def test_pair_approve_from_a_shell_lets_them_in_while_the_bot_runs(
    app: App, chats: Chats, clock: Clock, fake_openai: FakeOpenAI, workspace: Path, tmp_path: Path
) -> None:
    clock.at = datetime.now(UTC)  # the shell's clock is the real one
    code = await ask(app, chats, STRANGER)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        "BOT_WORKSPACE": str(workspace),
        "BOT_TELEGRAM__OWNER_IDS": f"[{OWNER}]",
    }

    listed = await run_bot_command(env, tmp_path, "pair", "list", within=30)
    wrong = await run_bot_command(env, tmp_path, "pair", "approve", "ZZZZ2222", within=30)
    approved = await run_bot_command(env, tmp_path, "pair", "approve", code, within=30)
    fake_openai.script(Reply("hello"))
    await send(app, chats, "am I in?", user=STRANGER)  # the running app reads the file afresh

    assert listed[0] == 0 and f"/pair {code}" in listed[1]
    assert wrong[0] == 1 and UNKNOWN_CODE.format(code="ZZZZ-2222") in wrong[1]
    assert approved[0] == 0 and f"(id {STRANGER}) can talk to me now" in approved[1]
    assert chats.sent(STRANGER)[-1] == "hello"


# ----------------------------------------------------------------------------- /start, names


async def test_start_sends_a_waiting_stranger_their_code_again_but_not_too_often(
    app: App, chats: Chats, clock: Clock
) -> None:
    code = await ask(app, chats, STRANGER)
    await send(app, chats, "/start", user=STRANGER)  # the notice is fresh: nothing yet
    clock.at = START + timedelta(minutes=10)

    await send(app, chats, "/start", user=STRANGER)
    await send(app, chats, "/start", user=STRANGER)  # again at once: rate-limited
    clock.at = START + timedelta(minutes=16)
    await send(app, chats, "/start", user=STRANGER)
    await send(app, chats, "still there?", user=STRANGER)  # not /start: silence as before

    sent = chats.sent(STRANGER)
    assert len(sent) == 3, sent
    assert [CODE.findall(text) for text in sent] == [[code]] * 3
    assert "(valid for 50 min)" in sent[1] and "(valid for 44 min)" in sent[2]
    assert len(chats.sent(OWNER)) == 1  # the owner was told once


async def test_start_gives_back_a_lost_notice_within_a_minute(
    app: App, chats: Chats, clock: Clock
) -> None:
    code = await ask(app, chats, STRANGER)
    clock.at = START + timedelta(seconds=40)  # the notice was lost: the Start button again
    await send(app, chats, "/start", user=STRANGER)
    clock.at = START + timedelta(seconds=55)
    await send(app, chats, "/start", user=STRANGER)  # 15 s after the last: not yet
    clock.at = START + timedelta(seconds=75)
    await send(app, chats, "/start", user=STRANGER)

    sent = chats.sent(STRANGER)
    assert len(sent) == 3, sent
    assert [CODE.findall(text) for text in sent] == [[code]] * 3
    assert len(chats.sent(OWNER)) == 1  # the owner was told once


async def test_the_owner_reads_the_persons_name_and_one_code_shape(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(
            STRANGER, STRANGER, "hello", first_name="Bob Stone", username="bobby"
        )
        [notice] = await fake_telegram.wait_for_messages(STRANGER, 1)
        told = await fake_telegram.wait_for_messages(OWNER, 1)

    found = CODE.search(notice.text)
    assert found
    assert told[0].text.startswith(f"Bob Stone (@bobby) (Telegram id {STRANGER}) asks")
    assert f"/pair {found.group(1)}\n" in told[0].text  # K7M3-Q9XP, as the claim code is shown
