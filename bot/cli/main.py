"""Command line: `python -m bot setup | run | chat | doctor | health | prompt | memory … |
pair … | web link | eval retrieval`. Thin: parse, load settings, hand over (to the other
modules of `bot.cli`).

`chat` logs to `logs/console.log` in the workspace (to stderr with `-v`), so that nothing but the
conversation is on the terminal; Ctrl-C stops a reply, or at the prompt ends the chat, exit 0.
The commands that print their own lines (memory, pair, prompt, eval) log to `logs/cli.log`
there, so that only those lines are on the terminal; doctor (which creates nothing) and setup
log errors only (each line of theirs says what it found); `run` and `health` log to stderr.

Failures end here, never as a raw traceback and never with a secret: a `ConfigError` or a
`StartupError` (a rejected token, Telegram out of reach) is one `error: …` line on stderr, exit
2 or 1; anything else is a bug, logged with its traceback through the scrubbing log, exit 1.
Every line we print ourselves goes through `bot.logs.Scrubber` as the log does."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

from bot import logs
from bot.app import build_app, build_telegram
from bot.channels.console import ConsoleChannel, ConsoleReplier, own_terminal
from bot.channels.telegram.errors import is_network_error, is_rejected_token, startup_error
from bot.cli import evaluate, memory, pairs, prompt, reminders, setup, spending, web
from bot.cli.doctor import doctor, findings, health
from bot.errors import ConfigError, StartupError
from bot.settings import Settings, load_settings, require_secret, secret_values
from bot.storage.heartbeat import Heartbeat
from bot.storage.workspace import Workspace

TOKEN_VAR = "BOT_TELEGRAM__TOKEN"
API_KEY_VAR = "BOT_LLM__API_KEY"
ON_FATAL_VAR = "MNEMO_ON_FATAL"  # "wait" (the Docker image): a rejected token waits, not exits
WAITING = (
    "{reason}. Not restarting: waiting until stopped. Fix it in .env, then restart "
    "(docker compose up -d)"
)
log = structlog.get_logger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help="ask for the token, the model and the time zone; write .env")
    sub.add_parser("run", help="run the Telegram bot (long polling)")
    chat = sub.add_parser("chat", help="talk to the bot in this terminal")
    chat.add_argument("-v", "--verbose", action="store_true", help="logs on stderr, not a file")
    sub.add_parser("doctor", help="check the workspace, Telegram, owners, the model, recall")
    sub.add_parser("health", help="is the running bot polling? (its heartbeat; Docker)")
    evaluate.add_parser(sub)
    memory.add_parser(sub)
    pairs.add_parser(sub)
    prompt.add_parser(sub)
    reminders.add_parser(sub)
    spending.add_parser(sub)
    web.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    scrub = logs.Scrubber(())
    log_file: Path | None = None
    try:
        settings = load_settings()
        log_file = _log_file(settings, args)
        scrub = _configure_logs(  # before all else
            settings, to_file=log_file, errors_only=args.command in ("doctor", "setup")
        )
        if args.command == "setup":
            return setup.run()
        if args.command == "eval":
            return evaluate.run(settings, args, out=lambda line: print(scrub(line)))
        if args.command == "memory":
            return memory.run(settings, args)
        if args.command == "reminders":
            return reminders.run(settings, args, out=lambda line: print(scrub(line)))
        if args.command == "pair":
            return pairs.run(settings, args)
        if args.command == "web":
            return web.run(settings, args, out=lambda line: print(scrub(line)))
        if args.command == "usage":
            return spending.run(settings, args, out=lambda line: print(scrub(line)))
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
        where = f"in {log_file}" if log_file else "above"
        print(f"error: stopped on an unexpected error (logged {where})", file=sys.stderr)
        return 1


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
    try:
        await app.start()
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


def _configure_logs(
    settings: Settings, *, to_file: Path | None = None, errors_only: bool = False
) -> logs.Scrubber:
    """Logs scrubbed of every secret in the settings (on stderr, or appended `to_file`); the
    scrubber, for what we print."""
    return logs.configure(
        fmt=settings.log.format,
        level="ERROR" if errors_only else settings.log.level,
        secrets=secret_values(settings),
        transient=_transient,
        path=to_file,
    )


def _log_file(settings: Settings, args: argparse.Namespace) -> Path | None:
    """The console's log file (unless `chat -v`), or the one of the commands that print their
    own lines; None (stderr) for the bot and its health check, or when the workspace cannot
    hold a log."""
    logs_dir = Workspace(settings.workspace).logs_dir
    if args.command == "chat":
        return None if args.verbose else logs_dir / "console.log"
    if args.command in ("run", "health", "doctor", "setup"):
        return None
    try:  # doctor says what is wrong with a workspace that cannot be written
        logs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return logs_dir / "cli.log"


def _transient(exc: BaseException) -> bool:
    return logs.is_transport_error(exc) or is_network_error(exc)


_COMMANDS = {"run": run_telegram, "chat": run_console, "doctor": doctor}
