"""What a user sees when the bot cannot start: one line that says what to fix, no traceback, no
secret; and a Bot API outage logged without tracebacks. Each runs `python -m bot` as a process."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import REPO, bot_env, quiet_env, run_bot_command, start_bot_process
from tests.test_e2e_process import stop_process

REVOKED = "123456:revoked-Secret-42"  # not the fake's token, and too short to look like one
ODD_KEY = "test-key/with+odd=chars-0123456789"  # not `sk-` shaped: only knowing it cuts it


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again at once: connection refused


def assert_one_line_error(output: str, expected: str) -> None:
    """The error is the last line; at most the index's start-up line before it."""
    lines = output.strip().splitlines()
    assert lines[-1] == f"error: {expected}", output
    assert len(lines) <= 2, output
    assert "Traceback" not in output


async def test_a_rejected_token_stops_at_once_with_one_line(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, fake_openai))
    env["BOT_TELEGRAM__TOKEN"] = REVOKED

    code, output = await run_bot_command(env, tmp_path, "run")

    assert code == 1
    assert_one_line_error(
        output,
        "Telegram rejected the bot token: get a new one from @BotFather, then run make setup",
    )
    assert REVOKED not in output and REVOKED.split(":")[1] not in output


async def test_in_docker_a_rejected_token_waits_says_why_and_is_unhealthy(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, fake_openai))
    env |= {"BOT_TELEGRAM__TOKEN": REVOKED, "MNEMO_ON_FATAL": "wait"}  # as the image sets it
    log_path = tmp_path / "bot.log"
    process = start_bot_process(env, tmp_path, log_path)
    try:
        await asyncio.to_thread(wait_for_line, log_path, "Not restarting", seconds=30)
        health, said = await run_bot_command(env, tmp_path, "health")
        assert process.poll() is None  # still there: no restart loop
    finally:
        assert await stop_process(process) == 0  # `docker compose stop`: a clean end

    assert health == 1
    assert said.startswith(
        "unhealthy: Telegram rejected the bot token: get a new one from @BotFather, then run "
        "make setup. Not restarting: waiting until stopped."
    ), said
    output = log_path.read_text()
    assert "error: Telegram rejected the bot token" in output and "Traceback" not in output
    assert REVOKED.split(":")[1] not in output + said


async def test_an_unreachable_telegram_stops_with_one_line(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, fake_openai))
    base_url = f"http://127.0.0.1:{closed_port()}/bot"
    env["BOT_TELEGRAM__BASE_URL"] = base_url

    code, output = await run_bot_command(env, tmp_path, "run")

    assert code == 1
    assert_one_line_error(
        output,
        f"cannot reach Telegram at {base_url} (ConnectError: All connection attempts failed): "
        "check the network and BOT_TELEGRAM__BASE_URL",
    )
    assert fake_telegram.token not in output


async def test_doctor_says_what_to_fix_and_never_prints_an_echoed_key(
    tmp_path: Path, fake_telegram: FakeTelegram
) -> None:
    async with FakeOpenAI(api_key="sk-the-right-one") as strict:  # echoes a wrong key in its 401
        env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, strict))
        env |= {"BOT_TELEGRAM__TOKEN": REVOKED, "BOT_LLM__API_KEY": ODD_KEY}

        code, output = await run_bot_command(env, tmp_path, "doctor")

    assert code == 1
    lines = output.splitlines()
    assert (
        "FAIL  telegram: Telegram rejected the bot token: get a new one from @BotFather, then "
        "run make setup"
    ) in lines
    assert (
        f"FAIL  model: the model at {strict.base_url} rejected the API key (HTTP 401): "
        "check BOT_LLM__API_KEY"
    ) in lines
    assert "llm_error" not in output and "Incorrect API key" not in output  # no log lines
    for leak in (ODD_KEY, json.dumps(ODD_KEY)[1:-1], quote(ODD_KEY, safe=""), "odd=chars"):
        assert leak not in output
    assert REVOKED.split(":")[1] not in output and "Traceback" not in output


def wait_for_line(path: Path, text: str, *, seconds: float) -> None:
    """Block until the log file holds `text` (`AssertionError` after `seconds`)."""
    deadline = time.monotonic() + seconds
    while not path.exists() or text not in path.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"{text!r} never logged"
        time.sleep(0.1)


async def test_a_bot_api_outage_is_logged_without_tracebacks(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, fake_openai))
    log_path = tmp_path / "bot.log"
    process = start_bot_process(env, tmp_path, log_path)
    try:
        await fake_telegram.wait_for_poll(timeout=10)
        await fake_telegram.stop()  # dropped and refused until the bot met it, then back
        await asyncio.to_thread(wait_for_line, log_path, "telegram_unreachable", seconds=15)
        await fake_telegram.start()
        await fake_telegram.wait_for_poll(timeout=10)  # polling again
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 10)
    text = log_path.read_text()
    assert text.count("telegram_unreachable") == 1  # the outage was met, and logged once
    assert "Traceback" not in text
    assert len(text.splitlines()) < 15, text
    assert process.returncode == 0


def test_a_reader_that_stops_reading_ends_the_command_quietly(tmp_path: Path) -> None:
    """`python -m bot usage | head`: head has its lines and goes; the command ends without a
    word (no "error: stopped on an unexpected error", no complaint at exit)."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "BOT_WORKSPACE": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "usage"],
        cwd=tmp_path,
        env=env | {"BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml")},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # gone before the command printed a line
    with process.stderr:
        said = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0, said
    assert said == ""
