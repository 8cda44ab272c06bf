"""Claiming a bot without an owner: the code in the log at start, /claim once, the owner kept in
the workspace, and what `doctor` can ask (`bot.turn.pairing.owners`)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.app import App, build_app
from bot.cli.doctor import check_owners
from bot.storage.files import FileLocks
from bot.storage.roster import Roster, RosterFile
from bot.storage.workspace import Workspace
from bot.turn.door import (
    CLAIM_PRIVATE,
    CLAIM_WRONG,
    CLAIMED,
    OWNED,
    PAIR_LIST,
    PLACEHOLDER_LOG,
    UNCLAIMED,
)
from bot.turn.pairing import ALPHABET, PLACEHOLDER_OWNER, Owners, owners
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import (
    API_KEY,
    FRIEND,
    OWNER,
    REPO,
    STRANGER,
    bot_env,
    make_settings,
    run_bot_command,
    start_bot_process,
)
from tests.talk import RecordingReplier, message
from tests.test_e2e_process import stop_process

CLAIM_LINE = re.compile(
    rf"No owner yet: send /claim ([{ALPHABET}]{{4}}-[{ALPHABET}]{{4}}) to your bot in a "
    "private chat"
)


async def claim_code_in(log_path: Path, *, within: float = 30.0) -> str:
    """The claim code of the last start, once the log shows it."""
    for _ in range(int(within * 10)):
        text = await asyncio.to_thread(lambda: log_path.read_text() if log_path.exists() else "")
        found = CLAIM_LINE.findall(text)
        if found:
            return str(found[-1])
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no claim line in {log_path}")


@pytest.fixture
async def unowned(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[tuple[App, str]]:
    """A started app with no owner configured, and the claim code its start logged."""
    app = build_app(
        make_settings(
            workspace, telegram=None, openai=fake_openai, owner_ids=(), allowed_user_ids=()
        ),
        api_key=API_KEY,
    )
    with capture_logs() as logs:
        await app.start()
    try:
        yield app, _claim_code(logs)
    finally:
        await app.aclose()


def _claim_code(logs: Iterable[Mapping[str, Any]]) -> str:
    [code] = [m.group(1) for e in logs if (m := CLAIM_LINE.fullmatch(str(e["event"])))]
    return code


async def say(app: App, text: str, *, user: int, chat: int | None = None) -> list[str]:
    replier = RecordingReplier()
    await app.router.handle(message(text, at=app.now(), user=user, chat=chat), replier)
    return replier.sent


async def test_the_command_the_notice_names_works_where_the_bot_runs(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    """Someone who writes to a bot with no owner is told a command that shows the claim code;
    typed where the bot runs (its folder, its environment), it does."""
    workspace, log_path = tmp_path / "ws", tmp_path / "bot.log"
    env = bot_env(workspace, fake_telegram, fake_openai) | {
        "BOT_TELEGRAM__OWNER_IDS": "[]",
        "BOT_TELEGRAM__ALLOWED_USER_IDS": "[]",
    }
    process = start_bot_process(env, tmp_path, log_path)
    try:
        code = await claim_code_in(log_path)
        await fake_telegram.wait_for_poll(timeout=30)
        fake_telegram.push_text(STRANGER, STRANGER, "hello?")
        await fake_telegram.wait_for_messages(STRANGER, 1, timeout=30)
    finally:
        assert await stop_process(process) == 0
    [notice] = [m.text for m in fake_telegram.sent_messages(STRANGER)]
    named = re.search(r"claim code: run (.+?) where it runs", notice)
    assert named, notice

    shown = await asyncio.to_thread(
        subprocess.run,
        shlex.split(named.group(1)),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert shown.returncode == 0, shown.stderr
    assert code in shown.stdout


async def test_a_bot_without_an_owner_is_claimed_from_the_code_in_its_log(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace, log_path = tmp_path / "ws", tmp_path / "bot.log"
    env = bot_env(workspace, fake_telegram, fake_openai) | {
        "BOT_TELEGRAM__OWNER_IDS": "[]",
        "BOT_TELEGRAM__ALLOWED_USER_IDS": "[]",
    }
    fake_openai.script(Reply("hello, owner"))
    process = start_bot_process(env, tmp_path, log_path)
    try:
        code = await claim_code_in(log_path)
        await fake_telegram.wait_for_poll(timeout=30)
        fake_telegram.push_text(STRANGER, STRANGER, "hello?")
        fake_telegram.push_text(STRANGER, STRANGER, "anyone?")
        fake_telegram.push_text(OWNER, OWNER, "/claim WRNG-C0DE")
        await fake_telegram.wait_for_messages(OWNER, 1, timeout=30)
        fake_telegram.push_text(OWNER, OWNER, f"/claim {code}")
        await fake_telegram.wait_for_messages(OWNER, 2, timeout=30)
        fake_telegram.push_text(OWNER, OWNER, "hi")
        fake_telegram.push_text(FRIEND, FRIEND, f"/claim {code}")  # the code is void now
        await fake_telegram.wait_for_messages(FRIEND, 1, timeout=30)
        await fake_telegram.wait_for_messages(
            OWNER, 4, timeout=30
        )  # "hi"'s reply, and Bob's request
    finally:
        assert await stop_process(process) == 0

    [unclaimed] = [m.text for m in fake_telegram.sent_messages(STRANGER)]
    pair_list = f"{sys.executable} -m bot pair list"  # as typed where the bot runs (tmp_path)
    assert unclaimed == UNCLAIMED.format(user_id=STRANGER, pair_list=pair_list)
    owner = [m.text for m in fake_telegram.sent_messages(OWNER)]
    assert owner[:2] == [CLAIM_WRONG.format(pair_list=pair_list), CLAIMED.format(user_id=OWNER)]
    assert "hello, owner" in owner[2:]
    assert any(f"(Telegram id {FRIEND}) asks to talk to me" in text for text in owner[2:])
    [friend] = fake_telegram.sent_messages(FRIEND)
    assert f"Your Telegram id: {FRIEND}" in friend.text  # a stranger's pairing notice
    stored = json.loads((workspace / "state" / "paired.json").read_text())
    assert [m["id"] for m in stored["owners"]] == [OWNER]
    assert fake_openai.calls == 1
    assert CLAIM_LINE.findall(log_path.read_text()) == [code]  # one code, void once claimed


async def test_the_claimed_owner_is_an_owner_after_a_restart_and_no_code_is_logged(
    unowned: tuple[App, str], workspace: Path, fake_openai: FakeOpenAI
) -> None:
    app, code = unowned
    assert await say(app, f"/claim {code.lower()}", user=OWNER) == [CLAIMED.format(user_id=OWNER)]
    settings = make_settings(workspace, telegram=None, openai=fake_openai, owner_ids=())

    fresh = build_app(settings, api_key=API_KEY)
    with capture_logs() as logs:
        await fresh.start()
    try:
        assert fresh.router.access.is_owner(OWNER)
        assert [e for e in logs if e["event"] == "owners"] == [
            {"event": "owners", "ids": [OWNER], "pairing": True, "log_level": "debug"}
        ]
        assert not any(CLAIM_LINE.search(str(e["event"])) for e in logs)
    finally:
        await fresh.aclose()


async def test_a_claim_in_a_group_or_with_a_wrong_code_is_refused(
    unowned: tuple[App, str], workspace: Path
) -> None:
    app, code = unowned

    in_group = await say(app, f"/claim {code}", user=OWNER, chat=-100500)
    wrong = await say(app, "/claim", user=OWNER)

    assert (in_group, wrong) == ([CLAIM_PRIVATE], [CLAIM_WRONG.format(pair_list=PAIR_LIST)])
    stored = json.loads((workspace / "state" / "paired.json").read_text())
    assert stored["owners"] == [] and stored["claim_code"] == code.replace("-", "")
    assert not app.router.access.is_owner(OWNER)


async def test_two_claims_at_once_make_one_owner(unowned: tuple[App, str]) -> None:
    app, code = unowned

    first, second = await asyncio.gather(
        say(app, f"/claim {code}", user=OWNER), say(app, f"/claim {code}", user=FRIEND)
    )

    assert sorted([*first, *second]) == sorted([CLAIMED.format(user_id=OWNER), OWNED])
    assert app.router.access.owners() == {OWNER}


async def test_the_example_owner_id_is_nobody_and_the_log_says_so(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        workspace, telegram=None, openai=fake_openai, owner_ids=(PLACEHOLDER_OWNER,)
    )
    app = build_app(settings, api_key=API_KEY)
    with capture_logs() as logs:
        await app.start()
    try:
        code = _claim_code(logs)
        assert PLACEHOLDER_LOG in [e["event"] for e in logs]
        assert not app.router.access.allows(PLACEHOLDER_OWNER)
        kept = code.replace("-", "")
        assert owners((PLACEHOLDER_OWNER,), roster_at(workspace)) == _owners(
            (), (), placeholder=True, claim_code=kept
        )
        await say(app, f"/claim {code}", user=OWNER)
        assert owners((PLACEHOLDER_OWNER,), roster_at(workspace)) == _owners(
            (), (OWNER,), placeholder=True
        )
        assert owners((FRIEND,), roster_at(workspace)).any
        assert not owners((), roster_at(workspace / "elsewhere")).any
    finally:
        await app.aclose()


def roster_at(workspace: Path) -> Roster:
    return RosterFile(Workspace(workspace).roster_path, FileLocks()).current()


def _owners(
    configured: tuple[int, ...],
    claimed: tuple[int, ...],
    *,
    placeholder: bool,
    claim_code: str | None = None,
) -> Owners:
    return Owners(configured, claimed, placeholder=placeholder, claim_code=claim_code)


async def test_the_claim_code_is_kept_until_used_and_pair_list_and_doctor_show_it(
    unowned: tuple[App, str], workspace: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    app, code = unowned
    settings = make_settings(workspace, telegram=None, openai=fake_openai, owner_ids=())
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        "BOT_WORKSPACE": str(workspace),
        "BOT_TELEGRAM__OWNER_IDS": "[]",
    }

    restarted = build_app(settings, api_key=API_KEY)
    with capture_logs() as logs:
        await restarted.start()
    await restarted.aclose()
    listed = await run_bot_command(env, tmp_path, "pair", "list", within=30)
    found = await check_owners(settings)

    assert _claim_code(logs) == code  # the same code after a restart
    assert listed == (0, f"No owner yet: send /claim {code} to your bot in a private chat.\n"
                         "No requests are waiting.\nNobody is paired yet.\n")  # fmt: skip
    assert found.level == "warn" and f"send /claim {code} to your bot" in found.text
    await say(app, f"/claim {code}", user=OWNER)
    assert "claim_code" not in json.loads((workspace / "state" / "paired.json").read_text())
    after = await run_bot_command(env, tmp_path, "pair", "list", within=30)
    assert after == (0, "No requests are waiting.\nNobody is paired yet.\n")


async def test_pair_list_makes_the_code_before_the_bot_ever_ran(
    workspace: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        "BOT_WORKSPACE": str(workspace),
        "BOT_TELEGRAM__OWNER_IDS": "[]",
    }
    code, listed = await run_bot_command(env, tmp_path, "pair", "list", within=30)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, owner_ids=())
    app = build_app(settings, api_key=API_KEY)
    with capture_logs() as logs:
        await app.start()
    await app.aclose()

    assert code == 0
    assert f"send /claim {_claim_code(logs)} to your bot" in listed


async def test_the_message_sent_before_claiming_is_answered_once_claimed(
    unowned: tuple[App, str], fake_openai: FakeOpenAI
) -> None:
    app, code = unowned
    fake_openai.script(Reply("It is sunny."))

    before = await say(app, "what's the weather like?", user=OWNER)
    again = await say(app, "hello?", user=OWNER)
    claimed = await say(app, f"/claim {code}", user=OWNER)

    assert before == [UNCLAIMED.format(user_id=OWNER, pair_list=PAIR_LIST)] and again == []
    assert claimed == [CLAIMED.format(user_id=OWNER), "It is sunny."]
    assert fake_openai.calls == 1
    assert fake_openai.requests[-1]["messages"][-1]["content"] == "hello?"  # the last one sent
    assert await say(app, f"/claim {code}", user=OWNER) == [OWNED]  # answered once only
    assert fake_openai.calls == 1
