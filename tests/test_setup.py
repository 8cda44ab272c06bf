"""`python -m bot setup`, answers piped in as a newcomer would type them, against the fake Bot API
and the fake model: each value checked before it is kept, `.env` written 0600 with no secret on
the screen, Enter keeping what is set, and the claim code at the end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from dotenv import dotenv_values

from bot.cli.setup import API_KEY, BASE_URL, MODEL, TIMEZONE, TOKEN, updated
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again at once: connection refused


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


# ----------------------------------------------------------------------------- a person at it


def wizard_env(folder: Path, telegram: FakeTelegram) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        "BOT_TELEGRAM__BASE_URL": telegram.base_url,
        "BOT_WORKSPACE": str(folder / "workspace"),
        "TZ": "UTC",
    }


class Terminal:
    """`python -m bot setup` on a terminal of its own (a pty), as a person runs it: what it
    shows, keys typed, its exit status."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the pty is its terminal
            os.chdir(folder)
            os.execve(sys.executable, [sys.executable, "-m", "bot", "setup"], env)
        self.shown = ""

    def wait_for(self, text: str, *, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while text not in self.shown:
            assert time.monotonic() < deadline, f"{text!r} never shown: {self.shown!r}"
            if select.select([self.fd], [], [], 0.2)[0]:
                self.shown += os.read(self.fd, 4096).decode(errors="replace")

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def status(self, *, seconds: float = 30) -> int:
        """The exit status, once it ended by itself (no more keys typed), reading what it shows
        meanwhile; `AssertionError` (and the process killed) if it is still asking."""
        deadline = time.monotonic() + seconds
        while (ended := os.waitpid(self.pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                raise AssertionError(f"still running after Ctrl-C: {self.shown!r}")
            with contextlib.suppress(OSError):  # EIO once the child closed its end
                if select.select([self.fd], [], [], 0.2)[0]:
                    self.shown += os.read(self.fd, 4096).decode(errors="replace")
        with contextlib.suppress(OSError):
            while select.select([self.fd], [], [], 0)[0] and (chunk := os.read(self.fd, 4096)):
                self.shown += chunk.decode(errors="replace")
        os.close(self.fd)
        return os.waitstatus_to_exitcode(ended[1])


@pytest.mark.parametrize("at", ["the token", "the endpoint"])
async def test_ctrl_c_at_a_prompt_stops_at_once_leaving_env_as_it_was(
    folder: Path, fake_telegram: FakeTelegram, at: str
) -> None:
    before = "BOT_LLM__MODEL=mine\n# my own notes\n"
    (folder / ".env").write_text(before)
    terminal = Terminal(folder, wizard_env(folder, fake_telegram))

    await asyncio.to_thread(terminal.wait_for, "Bot token")
    if at == "the endpoint":
        terminal.type(fake_telegram.token + "\r")
        await asyncio.to_thread(terminal.wait_for, "Endpoint (base URL)")
    terminal.type("\x03")  # Ctrl-C, and nothing more
    status = await asyncio.to_thread(terminal.status)

    assert status == 130, terminal.shown
    assert "Setup stopped: .env was not changed." in terminal.shown
    assert (folder / ".env").read_text() == before
    assert fake_telegram.token not in terminal.shown


async def test_a_failed_value_is_never_offered_back(
    folder: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    (folder / ".env").write_text(f"BOT_TELEGRAM__TOKEN=123456:{'R' * 35}\n")  # revoked since
    dead = f"http://127.0.0.1:{free_port()}/v1"
    answers = [
        "",  # Enter: the token in .env, which Telegram rejects
        fake_telegram.token,
        dead,  # nothing listens there
        KEY,
        "fake-model",
        "n",  # not saved unchecked: asked again
        strict_openai.base_url,
        "",  # the key typed did not fail: Enter keeps it
        "",  # and the model name
        "UTC",
    ]

    code, said = await setup(folder, fake_telegram, answers)

    assert code == 0, said
    prompts = [line for line in said.splitlines() if line.startswith(("Bot token", "Endpoint"))]
    assert prompts[:2] == ["Bot token [set: Enter keeps it]: ", "Bot token: "], said
    assert prompts[2:] == [
        "Endpoint (base URL) [https://api.openai.com/v1]: ",
        "Endpoint (base URL) [https://api.openai.com/v1]: ",  # not the dead one typed
    ], said
    assert f"[{dead}]" not in said
    assert "API key (any text for a local server) [set: Enter keeps it]: " in said
    assert dotenv_values(folder / ".env")["BOT_LLM__BASE_URL"] == strict_openai.base_url


async def test_a_rejected_token_says_what_to_type_here(
    folder: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    answers = ["123456:not-a-real-token-at-all", fake_telegram.token]
    answers += [strict_openai.base_url, KEY, "fake-model", "UTC"]

    code, said = await setup(folder, fake_telegram, answers)

    assert code == 0, said
    [told] = [line for line in said.splitlines() if "That did not work" in line]
    assert "copy it again from @BotFather" in told and "paste it here" in told
    assert "BOT_TELEGRAM__TOKEN" not in told and "set " not in told


async def test_a_model_not_up_yet_can_be_saved_unchecked(
    folder: Path, fake_telegram: FakeTelegram
) -> None:
    later = f"http://127.0.0.1:{free_port()}/v1"  # a local Ollama not started yet
    answers = [fake_telegram.token, later, "anything", "llama3.2", "y", "UTC"]

    code, said = await setup(folder, fake_telegram, answers)

    assert code == 0, said
    assert "Save these anyway, unchecked" in said
    assert "Saved unchecked: when the bot starts, it says in one line" in said
    written = dotenv_values(folder / ".env")
    assert (written["BOT_LLM__BASE_URL"], written["BOT_LLM__MODEL"]) == (later, "llama3.2")


async def test_a_rejected_key_is_not_offered_to_be_saved_unchecked(
    folder: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    answers = [fake_telegram.token, strict_openai.base_url, WRONG_KEY, "fake-model"]
    answers += ["", KEY, "", "UTC"]  # asked again at once: no "save anyway" for a wrong key

    code, said = await setup(folder, fake_telegram, answers)

    assert code == 0, said
    assert "Save these anyway" not in said
    assert dotenv_values(folder / ".env")["BOT_LLM__API_KEY"] == KEY


async def test_docker_s_user_ids_are_written_too(
    folder: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    answers = [fake_telegram.token, strict_openai.base_url, KEY, "fake-model", "UTC"]

    code, said = await setup(folder, fake_telegram, answers)

    assert code == 0, said
    written = dotenv_values(folder / ".env")
    assert (written["MNEMO_UID"], written["MNEMO_GID"]) == (str(os.getuid()), str(os.getgid()))
    text = (folder / ".env").read_text()
    assert text.count("MNEMO_UID=") == 1  # the example's line, changed in place


def test_the_example_holds_every_line_setup_writes() -> None:
    """`.env.example` (what a person copies by hand, and what a new `.env` starts from) has a
    line, under its comment, for each answer setup writes: none is added at the end."""
    example = (REPO / ".env.example").read_text()
    for key in (TOKEN, BASE_URL, API_KEY, MODEL, TIMEZONE, "MNEMO_UID", "MNEMO_GID"):
        assert re.search(rf"^#.*\n{key}=", example, re.M), key
