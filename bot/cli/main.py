"""Command line: `python -m bot run | chat | doctor | health | prompt | memory … | pair … |
eval retrieval`. Thin: parse, load settings, hand over (to the other modules of `bot.cli`).

`chat` logs to `logs/console.log` in the workspace (to stderr with `-v`), so that nothing but the
conversation is on the terminal; Ctrl-C stops a reply, or at the prompt ends the chat, exit 0.

Failures end here, never as a raw traceback and never with a secret: a `ConfigError` or a
`StartupError` (a rejected token, Telegram out of reach) is one `error: …` line on stderr, exit
2 or 1; anything else is a bug, logged with its traceback through the scrubbing log, exit 1.
Every line we print ourselves goes through `bot.logs.Scrubber` as the log does."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

from bot import logs
from bot.app import build_app, build_telegram
from bot.channels.console import ConsoleChannel, ConsoleReplier, own_terminal
from bot.channels.telegram.errors import is_network_error, startup_error
from bot.cli import evaluate, memory, pairs, prompt
from bot.cli.doctor import doctor, health
from bot.errors import ConfigError, StartupError
from bot.settings import Settings, load_settings, require_secret, secret_values
from bot.storage.heartbeat import Heartbeat
from bot.storage.workspace import Workspace

TOKEN_VAR = "BOT_TELEGRAM__TOKEN"
API_KEY_VAR = "BOT_LLM__API_KEY"
log = structlog.get_logger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run the Telegram bot (long polling)")
    chat = sub.add_parser("chat", help="talk to the bot in this terminal")
    chat.add_argument("-v", "--verbose", action="store_true", help="logs on stderr, not a file")
    sub.add_parser("doctor", help="check the workspace, Telegram, owners, the model, recall")
    sub.add_parser("health", help="is the running bot polling? (its heartbeat; Docker)")
    evaluate.add_parser(sub)
    memory.add_parser(sub)
    pairs.add_parser(sub)
    prompt.add_parser(sub)
    args = parser.parse_args(argv)
    scrub = logs.Scrubber(())
    try:
        settings = load_settings()
        scrub = _configure_logs(settings, to_file=_log_file(settings, args))  # before all else
        if args.command == "eval":
            return evaluate.run(settings, args, out=lambda line: print(scrub(line)))
        if args.command == "memory":
            return memory.run(settings, args)
        if args.command == "pair":
            return pairs.run(settings, args)
        if args.command == "prompt":
            return asyncio.run(prompt.run(settings, args, out=lambda line: print(scrub(line))))
        if args.command == "health":
            return health(settings)
        return asyncio.run(_COMMANDS[args.command](settings))
    except ConfigError as exc:
        print(f"error: {scrub(str(exc))}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"error: {scrub(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0 if args.command == "chat" else 130  # `make chat`: no "Error 130" at the end
    except Exception:  # a bug: its traceback goes through the scrubbing log, never raw
        log.exception("stopped_on_error")
        print("error: stopped on an unexpected error (logged above)", file=sys.stderr)
        return 1


async def run_telegram(settings: Settings) -> int:
    token = require_secret(settings.telegram.token, TOKEN_VAR)
    api_key = require_secret(settings.llm.api_key, API_KEY_VAR)
    app = build_app(settings, api_key=api_key)
    channel = build_telegram(
        app, settings, token=token, heartbeat=Heartbeat(app.workspace.heartbeat_path)
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await app.start()
        await channel.run(stop)
    except Exception as exc:  # PTB's errors at start, as the line that says what to fix
        stopped = startup_error(exc, base_url=settings.telegram.base_url)
        if stopped is None or stopped is exc:
            raise
        raise stopped from exc
    finally:
        await app.aclose()
    return 0


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


def _configure_logs(settings: Settings, *, to_file: Path | None = None) -> logs.Scrubber:
    """Logs scrubbed of every secret in the settings (on stderr, or appended `to_file`); the
    scrubber, for what we print."""
    return logs.configure(
        fmt=settings.log.format,
        level=settings.log.level,
        secrets=secret_values(settings),
        transient=_transient,
        path=to_file,
    )


def _log_file(settings: Settings, args: argparse.Namespace) -> Path | None:
    """The console's log file, unless `chat -v` (or another command) logs to stderr."""
    if args.command != "chat" or args.verbose:
        return None
    return Workspace(settings.workspace).logs_dir / "console.log"


def _transient(exc: BaseException) -> bool:
    return logs.is_transport_error(exc) or is_network_error(exc)


_COMMANDS = {"run": run_telegram, "chat": run_console, "doctor": doctor}
