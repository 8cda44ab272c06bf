"""Builds and runs the real bot against the fakes: in-process, or as a `python -m bot` process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.app import App, build_app, build_telegram
from bot.settings import (
    CompactionSettings,
    LLMSettings,
    MemorySettings,
    Settings,
    TelegramSettings,
)
from bot.web.checks import Checks
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram

REPO = Path(__file__).resolve().parents[1]
SMALL_MODEL2VEC = REPO / "tests" / "data" / "minilm-m2v-small"  # see tests/data/small_model.py
OWNER = 1001
FRIEND = 2002
STRANGER = 3003
API_KEY = "sk-test-0123456789abcdef"


def make_settings(
    workspace: Path,
    *,
    telegram: FakeTelegram | None,
    openai: FakeOpenAI,
    owner_ids: tuple[int, ...] = (OWNER,),
    allowed_user_ids: tuple[int, ...] = (FRIEND,),
    fast_model: str | None = None,
    **overrides: Any,
) -> Settings:
    telegram_settings = TelegramSettings(
        token=SecretStr(telegram.token) if telegram else None,
        base_url=telegram.base_url if telegram else "http://127.0.0.1:9/bot",
        owner_ids=owner_ids,
        allowed_user_ids=allowed_user_ids,
        poll_timeout=1,
        typing_interval=0.2,
        debounce=0.0,  # each message a turn of its own (tests/test_follow_ups.py: together)
    )
    llm = LLMSettings(
        base_url=openai.base_url,
        api_key=SecretStr(API_KEY),
        model="fake-model",
        fast_model=fast_model,
        timeout=10,
        max_retries=0,
    )
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=workspace,
        telegram=telegram_settings,
        llm=llm,
        # receipts (messages with buttons) are test_receipts'; elsewhere /remember answers in text
        memory=overrides.pop("memory", MemorySettings(receipts=False)),
        **overrides,
    )


def models_file(folder: Path, *, window: int, model: str = "fake-model") -> Path:
    """A `config/models.json` giving `model` (and every unknown model) a `window`."""
    path = folder / "models.json"
    document = {"version": 1, "default_context_window": window, "context_windows": {model: window}}
    path.write_text(json.dumps(document))
    return path


def small_window_settings(
    workspace: Path, folder: Path, openai: FakeOpenAI, *, window: int = 6000, **compaction: Any
) -> Settings:
    """A `window`-token model (compaction past 80% of it) keeping 4 messages unless told, the
    fast model "fake-fast", a 200-token memory budget, no consolidation and no pre-compaction
    memory flush unless told (`flush_enabled=True`)."""
    config = {
        "models_file": models_file(folder, window=window),
        "keep_last_messages": 4,
        "flush_enabled": False,
    }
    return make_settings(
        workspace,
        telegram=None,
        openai=openai,
        fast_model="fake-fast",
        # no consolidation (a window no test reaches), and no trim before compaction has its say
        memory=MemorySettings(memory_window=100_000, keep_messages=10, prompt_budget_tokens=200),
        compaction=CompactionSettings(**{**config, **compaction}),
    )


@asynccontextmanager
async def started_app(settings: Settings) -> AsyncIterator[App]:
    """The composed app with its background services running, closed afterwards."""
    app = build_app(settings, api_key=API_KEY)
    await app.start()
    try:
        yield app
    finally:
        await app.aclose()


@asynccontextmanager
async def running_bot(
    settings: Settings,
    telegram: FakeTelegram,
    *,
    now: Callable[[], datetime] | None = None,
    checks: Checks | None = None,
) -> AsyncIterator[App]:
    """The whole bot, polling the fake Telegram, until the block ends (`now`: its clock;
    `checks`: doctor's, for the memory page's Health)."""
    app = build_app(settings, api_key=API_KEY, now=now, checks=checks)
    channel = build_telegram(app, settings, token=telegram.token)
    await app.start()
    stop = asyncio.Event()
    task = asyncio.create_task(channel.run(stop))
    try:
        await telegram.wait_for_poll()
        yield app
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=10)
        await app.aclose()


def bot_env(workspace: Path, telegram: FakeTelegram, openai: FakeOpenAI) -> dict[str, str]:
    """Environment for `python -m bot run` against the fakes, as a user would set it."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workspace.parent),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        "BOT_TELEGRAM__TOKEN": telegram.token,
        "BOT_TELEGRAM__BASE_URL": telegram.base_url,
        "BOT_TELEGRAM__OWNER_IDS": f"[{OWNER}]",
        "BOT_TELEGRAM__ALLOWED_USER_IDS": f"[{FRIEND}]",
        "BOT_TELEGRAM__POLL_TIMEOUT": "1",
        "BOT_TELEGRAM__DEBOUNCE": "0",  # each message a turn of its own
        "BOT_LLM__BASE_URL": openai.base_url,
        "BOT_LLM__API_KEY": API_KEY,
        "BOT_LLM__MODEL": "fake-model",
        "BOT_LLM__MAX_RETRIES": "0",
        "BOT_WORKSPACE": str(workspace),
        "BOT_LOG__FORMAT": "json",
        "BOT_LOG__LEVEL": "DEBUG",
    }


def start_bot_process(env: dict[str, str], cwd: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """`python -m bot run` in the background, its logs going to `log_path`."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "bot", "run"],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def quiet_env(env: dict[str, str]) -> dict[str, str]:
    """`env` logging as a user's default does (console, INFO), with the real models file: what a
    user would see on the terminal."""
    return env | {
        "BOT_LOG__FORMAT": "console",
        "BOT_LOG__LEVEL": "INFO",
        "BOT_COMPACTION__MODELS_FILE": str(REPO / "config" / "models.json"),
    }


async def run_bot_command(
    env: dict[str, str], cwd: Path, *args: str, within: float = 40.0
) -> tuple[int, str]:
    """`python -m bot <args>` to its end (the fakes keep serving meanwhile): its exit code and
    its stdout and stderr together. `within` only ends a process that hangs: a doctor on a
    loaded machine (a full run beside other work) took more than 10 s."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), within)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return process.returncode, output.decode()
