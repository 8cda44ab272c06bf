"""`python -m bot run` (Telegram) and `python -m bot chat` (the console): the whole bot, until it
is stopped.

`run` asks the model server once as it starts whether it can be used (`OpenAIChat.reachable`: a
wrong key, a wrong address, a server that is down), beside the start, never holding it up; what
is wrong is one line in the log, and the bot runs on (the owner then knows why answers fail). A
token Telegram rejects stops it with one line, or — in the Docker image (`MNEMO_ON_FATAL=wait`),
where a restart would loop — waits, unhealthy, saying why.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Callable

import structlog

from bot.app import build_app, build_telegram
from bot.background import OwnedTask
from bot.channels.console import ConsoleChannel, ConsoleReplier, own_terminal
from bot.channels.telegram.errors import is_rejected_token, startup_error
from bot.cli.doctor import TOKEN_VAR, findings
from bot.errors import LLMError
from bot.llm.failures import API_KEY_VAR
from bot.llm.openai_chat import OpenAIChat
from bot.settings import Settings
from bot.settings_errors import require_secret
from bot.storage.heartbeat import Heartbeat

Print = Callable[[str], None]
ON_FATAL_VAR = "MNEMO_ON_FATAL"  # "wait" (the Docker image): a rejected token waits, not exits
MODEL_CHECK_TIMEOUT = 30.0
WAITING = (
    "{reason}. Not restarting: waiting until stopped. Fix it in .env (make setup), then restart "
    "(docker compose up -d)"
)
MODEL_DOWN = (
    "The model cannot answer: {why}. The bot keeps running, and its answers say what failed "
    "until this is fixed: run make setup to change the model's settings, then restart the bot"
)
log = structlog.get_logger(__name__)


def telegram(settings: Settings, args: argparse.Namespace, out: Print) -> int:
    return asyncio.run(run_telegram(settings))


def console(settings: Settings, args: argparse.Namespace, out: Print) -> int:
    return asyncio.run(run_console(settings))


async def run_telegram(settings: Settings) -> int:
    token = require_secret(settings.telegram.token, TOKEN_VAR)
    api_key = require_secret(settings.llm.api_key, API_KEY_VAR)
    app = build_app(settings, api_key=api_key, checks=lambda: findings(settings))
    heartbeat = Heartbeat(app.workspace.heartbeat_path)
    await asyncio.to_thread(heartbeat.reset)
    channel = build_telegram(app, settings, token=token, heartbeat=heartbeat)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    model_check = OwnedTask("model-check")
    try:
        await app.start()
        app.warm_when(channel.serving)
        model_check.start(say_if_the_model_fails(app.llm))
        await channel.run(stop)
    except Exception as exc:  # PTB's errors at start, as the line that says what to fix
        stopped = startup_error(exc, base_url=settings.telegram.base_url)
        if stopped is None:
            raise
        if not _waits_on(stopped):
            if stopped is exc:
                raise
            raise stopped from exc
        await _wait_stopped(str(stopped), heartbeat, stop)
    finally:
        await model_check.stop()
        await app.aclose()
    return 0


async def say_if_the_model_fails(llm: OpenAIChat) -> None:
    """One line in the log when the model server cannot be used; nothing when it can."""
    try:
        async with asyncio.timeout(MODEL_CHECK_TIMEOUT):
            await llm.reachable()
    except LLMError as exc:
        log.warning(MODEL_DOWN.format(why=str(exc)))
    except TimeoutError:
        why = f"the model at {llm.base_url} did not answer in {MODEL_CHECK_TIMEOUT:g} s"
        log.warning(MODEL_DOWN.format(why=why))


async def run_console(settings: Settings) -> int:
    api_key = require_secret(settings.llm.api_key, API_KEY_VAR)
    app = build_app(settings, api_key=api_key)
    replier = ConsoleReplier(sys.stdout, files=app.workspace.logs_dir)
    channel = ConsoleChannel(
        app.router, now=app.now, stdin=sys.stdin, stdout=sys.stdout, replier=replier
    )
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, channel.interrupt)
    try:
        with own_terminal(sys.stdin):
            await app.start()
            await channel.run()
    finally:
        await app.aclose()
    return 0


def _waits_on(exc: BaseException) -> bool:
    """Whether to wait rather than exit: a token Telegram rejected (no restart can fix it),
    where restarting is a loop (`MNEMO_ON_FATAL=wait`, set in the Docker image)."""
    return os.environ.get(ON_FATAL_VAR) == "wait" and is_rejected_token(exc)


async def _wait_stopped(reason: str, heartbeat: Heartbeat, stop: asyncio.Event) -> None:
    """Say why (the log, stderr, `python -m bot health`), then wait for SIGTERM."""
    line = WAITING.format(reason=reason)
    await asyncio.to_thread(heartbeat.stop_beating, line)
    log.error("waiting_for_a_fix", reason=reason)
    print(f"error: {line}", file=sys.stderr, flush=True)
    await stop.wait()
