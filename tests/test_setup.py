"""`python -m bot setup`, answers piped in as a newcomer would type them, against the fake Bot API
and the fake model: each value checked before it is kept, `.env` written 0600 with no secret on
the screen, Enter keeping what is set, and the claim code at the end."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from dotenv import dotenv_values

from bot.cli.setup import updated
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import REPO

KEY = "sk-setup-right-key-0123456789"
WRONG_KEY = "sk-setup-wrong-key-9876543210"


@pytest.fixture
async def strict_openai() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY) as fake:
        fake.answer_all(lambda request: Reply("OK"))
        yield fake


async def setup(
    folder: Path,
    telegram: FakeTelegram,
    answers: list[str],
    *,
    zone: str = "UTC",
    python: str = sys.executable,
) -> tuple[int, str]:
    """`python -m bot setup` in `folder`, `answers` piped one per line, on a machine in `zone`
    (TZ): exit code, output."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        "BOT_COMPACTION__MODELS_FILE": str(REPO / "config" / "models.json"),
        "BOT_TELEGRAM__BASE_URL": telegram.base_url,
        "BOT_WORKSPACE": str(folder / "workspace"),
        "TZ": zone,
    }
    process = await asyncio.create_subprocess_exec(
        python,
        "-m",
        "bot",
        "setup",
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    text = "".join(f"{answer}\n" for answer in answers).encode()
    output, _ = await asyncio.wait_for(process.communicate(text), 60)
    assert process.returncode is not None
    return process.returncode, output.decode()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A fresh clone's folder: `.env.example` and nothing else."""
    shutil.copy(REPO / ".env.example", tmp_path / ".env.example")
    return tmp_path


async def test_setup_checks_each_answer_writes_env_and_says_how_to_claim(
    folder: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    answers = [
        "123456:not-a-real-token-at-all",  # refused by getMe: asked again
        fake_telegram.token,
        strict_openai.base_url,
        WRONG_KEY,  # refused by the model: endpoint, key and name asked again
        "fake-model",
        "",  # Enter keeps the endpoint just typed
        KEY,
        "",  # and the model name
        "Mars/Olympus",  # not a time zone: asked again
        "Europe/Berlin",
    ]

    code, said = await setup(folder, fake_telegram, answers)

    assert code == 0, said
    env_file = folder / ".env"
    written = dotenv_values(env_file)
    assert {k: written[k] for k in ("BOT_TELEGRAM__TOKEN", "BOT_LLM__API_KEY")} == {
        "BOT_TELEGRAM__TOKEN": fake_telegram.token,
        "BOT_LLM__API_KEY": KEY,
    }
    assert (written["BOT_LLM__BASE_URL"], written["BOT_LLM__MODEL"]) == (
        strict_openai.base_url,
        "fake-model",
    )
    assert written["BOT_TIMEZONE"] == "Europe/Berlin"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "# Bot token from @BotFather (secret)." in env_file.read_text()  # the example's words
    assert said.count("That did not work") == 2
    assert "ok: @mnemo_test_bot" in said
    assert "'Mars/Olympus' is not a time zone name" in said
    for secret in (fake_telegram.token, fake_telegram.token.split(":")[1], KEY, WRONG_KEY):
        assert secret not in said
    assert strict_openai.last_request["max_tokens"] == 1  # a one-token call
    claim = re.search(r"/claim ([A-Z0-9]{4}-[A-Z0-9]{4})\n", said)
    assert claim, said
    stored = json.loads((folder / "workspace" / "state" / "paired.json").read_text())
    assert stored["claim_code"] == claim.group(1).replace("-", "")


async def test_run_from_the_project_s_venv_setup_names_that_python(
    folder: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    venv = folder / ".venv"  # as `make setup` made it: a bare `python` lacks the packages
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "lib").symlink_to(Path(sys.prefix) / "lib")
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
    answers = [fake_telegram.token, strict_openai.base_url, KEY, "fake-model", "Europe/Berlin"]

    code, said = await setup(folder, fake_telegram, answers, python=".venv/bin/python")

    assert code == 0, said
    assert "make run (or .venv/bin/python -m bot run)" in said
    assert "(.venv/bin/python -m bot pair list shows the code again.)" in said


async def test_a_rerun_keeps_what_is_set_when_enter_is_pressed(
    folder: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    first = [fake_telegram.token, strict_openai.base_url, KEY, "fake-model", "Asia/Tokyo"]
    assert (await setup(folder, fake_telegram, first))[0] == 0
    (folder / ".env").write_text((folder / ".env").read_text() + "MY_OWN=kept # mine\n")

    code, said = await setup(folder, fake_telegram, ["", "", "", "other-model", ""])

    assert code == 0, said
    written = dotenv_values(folder / ".env")
    assert written["BOT_TELEGRAM__TOKEN"] == fake_telegram.token
    assert written["BOT_LLM__API_KEY"] == KEY
    assert written["BOT_LLM__MODEL"] == "other-model"
    assert written["BOT_TIMEZONE"] == "Asia/Tokyo"
    assert written["MY_OWN"] == "kept"
    assert "Time zone [Asia/Tokyo]: " in said  # what .env holds, not the machine's (UTC)
    assert "Bot token [set: Enter keeps it]: " in said
    assert f"Endpoint (base URL) [{strict_openai.base_url}]: " in said
    assert KEY not in said and fake_telegram.token not in said


async def test_input_ending_early_writes_nothing(
    folder: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    code, said = await setup(folder, fake_telegram, [fake_telegram.token, strict_openai.base_url])

    assert code == 1
    assert said.rstrip().endswith("Setup stopped: .env was not changed.")
    assert not (folder / ".env").exists()


def test_env_lines_are_replaced_in_place_and_odd_values_quoted() -> None:
    text = "# a comment\nBOT_LLM__MODEL=old\nexport BOT_TIMEZONE=UTC\nOTHER=1\n"

    new = updated(text, {"BOT_LLM__MODEL": "my model #2", "BOT_TIMEZONE": "UTC", "NEW": 'a"b'})

    assert new == (
        '# a comment\nBOT_LLM__MODEL="my model #2"\nBOT_TIMEZONE=UTC\nOTHER=1\nNEW="a\\"b"\n'
    )


async def test_the_machines_time_zone_is_offered_first(
    folder: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    answers = [fake_telegram.token, strict_openai.base_url, KEY, "fake-model", ""]

    code, said = await setup(folder, fake_telegram, answers, zone="Europe/Berlin")

    assert code == 0, said
    assert "Time zone [Europe/Berlin]: " in said
    assert dotenv_values(folder / ".env")["BOT_TIMEZONE"] == "Europe/Berlin"
