"""Command line: `python -m bot run | chat | doctor`. Thin: parse, load settings, hand over."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence

import structlog

from bot import logs
from bot.app import build_app
from bot.channels.console import ConsoleChannel
from bot.channels.telegram import TelegramChannel, check_token
from bot.errors import ConfigError
from bot.models import ChatMessage
from bot.settings import Settings, load_settings, require_secret

TOKEN_VAR = "BOT_TELEGRAM__TOKEN"
API_KEY_VAR = "BOT_LLM__API_KEY"
log = structlog.get_logger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run the Telegram bot (long polling)")
    sub.add_parser("chat", help="talk to the bot in this terminal")
    sub.add_parser("doctor", help="check settings, workspace, Telegram and the model")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        return asyncio.run(_COMMANDS[args.command](settings))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


async def run_telegram(settings: Settings) -> int:
    token = require_secret(settings.telegram.token, TOKEN_VAR)
    api_key = require_secret(settings.llm.api_key, API_KEY_VAR)
    _configure_logs(settings, token, api_key)
    app = build_app(settings, api_key=api_key)
    channel = TelegramChannel(
        app.runner,
        token=token,
        base_url=settings.telegram.base_url,
        poll_timeout=settings.telegram.poll_timeout,
        typing_interval=settings.telegram.typing_interval,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await app.start()
        await channel.run(stop)
    finally:
        await app.aclose()
    return 0


async def run_console(settings: Settings) -> int:
    api_key = require_secret(settings.llm.api_key, API_KEY_VAR)
    _configure_logs(settings, api_key)
    app = build_app(settings, api_key=api_key)
    try:
        await app.start()
        await ConsoleChannel(app.runner, now=app.now, stdin=sys.stdin, stdout=sys.stdout).run()
    finally:
        await app.aclose()
    return 0


async def doctor(settings: Settings) -> int:
    """Check each part and say what is wrong, one line each."""
    _configure_logs(settings)
    problems = 0
    for name, check in (("telegram", _check_telegram), ("model", _check_model)):
        try:
            print(f"ok    {name}: {await check(settings)}")
        except Exception as exc:
            problems += 1
            print(f"FAIL  {name}: {type(exc).__name__}: {_redact(settings, str(exc))[:200]}")
    return 1 if problems else 0


async def _check_telegram(settings: Settings) -> str:
    token = require_secret(settings.telegram.token, TOKEN_VAR)
    return await asyncio.wait_for(check_token(token, settings.telegram.base_url), timeout=20)


async def _check_model(settings: Settings) -> str:
    api_key = require_secret(settings.llm.api_key, API_KEY_VAR)
    app = build_app(settings, api_key=api_key)
    try:
        reply = await app.llm.complete([ChatMessage(role="user", content="Say OK.")], max_tokens=5)
        return f"{settings.llm.model} answered {reply.content!r}; workspace {app.workspace.root}"
    finally:
        await app.aclose()


def _configure_logs(settings: Settings, *secrets: str) -> None:
    logs.configure(fmt=settings.log.format, level=settings.log.level, secrets=secrets)


def _redact(settings: Settings, text: str) -> str:
    for secret in (settings.telegram.token, settings.llm.api_key):
        if secret is not None and secret.get_secret_value():
            text = text.replace(secret.get_secret_value(), logs.REDACTED)
    return text


_COMMANDS = {"run": run_telegram, "chat": run_console, "doctor": doctor}
