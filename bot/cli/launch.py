"""A chosen command run (`bot.cli.main` parsed it): the settings read, the logs set up, the
command's module imported and called, and every failure ending here.

Where the logs go: `chat` to `logs/console.log` in the workspace (stderr with `-v`), so that
nothing but the conversation is on the terminal; the commands that print their own lines
(memory, pair, prompt, eval, usage, reminders) to `logs/cli.log` there, so that only those lines
are on the terminal; doctor (which creates nothing) and setup errors only (each line of theirs
says what it found); `run` and `health` to stderr.

Failures end here, never as a raw traceback and never with a secret: a `ConfigError` or a
`StartupError` (a rejected token, Telegram out of reach) is one `error: …` line on stderr, exit
2 or 1; Ctrl-C ends a command at once (exit 130; `chat`, whose way out it is, 0); a reader that
stopped reading (`python -m bot usage | head`) ends it quietly; anything else is a bug, logged
with its traceback through the scrubbing log, exit 1. Every line a command prints goes through
`bot.logs.Scrubber` as the log does.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast

import structlog

from bot import logs
from bot.errors import ConfigError, StartupError
from bot.settings import Settings, load_settings, secret_values
from bot.storage.workspace import Workspace

Print = Callable[[str], None]
Handler = Callable[[Settings, argparse.Namespace, Print], int]
OWN_LINES_ONLY = ("doctor", "setup")  # they log errors only: each line they print says enough
log = structlog.get_logger(__name__)


def run(args: argparse.Namespace) -> int:
    scrub = logs.Scrubber(())
    log_file: Path | None = None
    try:
        settings = load_settings()
        log_file = _log_file(settings, args)
        scrub = _configure_logs(
            settings, to_file=log_file, errors_only=args.command in OWN_LINES_ONLY
        )
        code = handler(args.runs)(settings, args, lambda line: print(scrub(line)))
        sys.stdout.flush()  # a reader gone is met here, not by Python at exit
        return code
    except ConfigError as exc:
        print(f"error: {scrub(str(exc))}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"error: {scrub(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0 if args.command == "chat" else 130  # `make chat`: no "Error 130" at the end
    except BrokenPipeError:
        return _reader_gone()
    except Exception:  # a bug: its traceback goes through the scrubbing log, never raw
        log.exception("stopped_on_error")
        where = f"in {log_file}" if log_file else "above"
        print(f"error: stopped on an unexpected error (logged {where})", file=sys.stderr)
        return 1


def handler(runs: str) -> Handler:
    """The function a command names ("module:function" under `bot.cli`), its module imported."""
    module, function = runs.split(":")
    return cast(Handler, getattr(importlib.import_module(f"bot.cli.{module}"), function))


def _reader_gone() -> int:
    """The reader of our output went away (`| head` had its lines): nothing more to say, and
    nothing to flush at exit, where Python would complain of the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


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
    # Telegram's errors only once one is logged: `health` and the shell commands never load it
    from bot.channels.telegram.errors import is_network_error

    return logs.is_transport_error(exc) or is_network_error(exc)
