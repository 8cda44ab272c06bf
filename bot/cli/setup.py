"""`python -m bot setup` (`make setup`): asks for what the bot needs, checks it, writes `.env`.

    Telegram bot token   checked with getMe (the bot's @username is shown)
    model endpoint, API key, model name   checked with a one-token request
    time zone            an IANA name (Europe/Berlin); the machine's own is offered

Each question shows the current value in brackets (a secret only as "set"), and Enter keeps it,
so a rerun changes only what is typed. A value that fails its check is asked again and is never
offered back as the bracketed default (of the model's three, only the one the failure blames
is dropped: a rejected key keeps the endpoint typed). A model server that does not answer yet
(a local one not started) may be saved anyway, saying so; the bot checks it again as it starts.

Answers are read a line at a time from stdin (piped answers work: no terminal needed); a secret
typed at a terminal is not echoed. The questions are asked outside any event loop, so Ctrl-C
at a prompt (or during a check) stops setup at once; it, or the end of input, leaves `.env` as
it was. `.env` is written in place (its other lines kept, odd values quoted, atomically, mode
0600; a new one starts from `.env.example`), with Docker's user ids (`MNEMO_UID`, `MNEMO_GID`)
beside the answers. Last, setup says how to claim the bot: `/claim CODE`, the code kept in the
workspace (`bot.turn.pairing`), unless owners are configured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import os
import re
import sys
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TextIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dotenv import dotenv_values
from pydantic import SecretStr

from bot import shell
from bot.app import clock
from bot.app.store import roster_only
from bot.channels.telegram.errors import is_rejected_token
from bot.cli.doctor import TOKEN_VAR, check_model, check_telegram, what_failed
from bot.errors import ConfigError, LLMCause, LLMError, LLMUnavailable, MnemoError, StartupError
from bot.llm.failures import API_KEY_VAR, BASE_URL_VAR, MODEL_VAR
from bot.settings import LLMSettings, Settings, load_settings
from bot.storage.files import atomic_write_text
from bot.storage.workspace import Workspace
from bot.turn.door import Door
from bot.turn.pairing import grouped

ENV_FILE = Path(".env")
EXAMPLE_FILE = Path(".env.example")
_PLAIN = re.compile(r"[^\s#'\"\\$`]*")  # written as is; anything else in double quotes
TOKEN, BASE_URL, API_KEY, MODEL = TOKEN_VAR, BASE_URL_VAR, API_KEY_VAR, MODEL_VAR  # .env's keys
TIMEZONE = "BOT_TIMEZONE"
_MODEL = LLMSettings()  # the settings' own defaults: what the bot uses when .env names none
DEFAULTS = {BASE_URL: _MODEL.base_url, MODEL: _MODEL.model}
DEFAULT_ZONE = "UTC"  # when neither .env nor this machine names one
KEY_QUESTION = "API key (any text for a local server)"
TOKEN_REJECTED = (
    "Telegram rejected this token: copy it again from @BotFather (send it /mybots, choose your "
    "bot, then API Token) and paste it here"
)
BLAMED = {  # the answer a model's failure says is wrong: not offered again
    LLMCause.KEY_REJECTED: (API_KEY,),
    LLMCause.OUT_OF_CREDIT: (API_KEY,),
    LLMCause.MODEL_NOT_FOUND: (MODEL,),
    LLMCause.NO_ENDPOINT: (BASE_URL,),
    LLMCause.UNREACHABLE: (BASE_URL,),
    LLMCause.TIMED_OUT: (BASE_URL,),
}


class Stopped(Exception):
    """The end of input before every answer was given."""


@dataclass
class Prompter:
    """Questions on `out`, answers a line at a time from `stdin`."""

    stdin: IO[str]
    out: TextIO

    def ask(self, question: str, current: str | None, *, secret: bool = False) -> str:
        shown = ("set: Enter keeps it" if secret else current) if current else None
        prompt = f"{question}" + (f" [{shown}]" if shown else "") + ": "
        if secret and self.stdin.isatty():
            answer = getpass.getpass(prompt, stream=self.out)
        else:
            self.out.write(prompt)
            self.out.flush()
            answer = self.stdin.readline()
            if not self.stdin.isatty():  # piped: the answer is not echoed, the line ends here
                self.out.write("\n")
            if not answer:
                raise Stopped
        return answer.strip() or (current or "")

    def yes(self, question: str) -> bool:
        return self.ask(f"{question} (y/N)", None).lower() in ("y", "yes")

    def say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()


def command(settings: Settings, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    return run()


def run(*, stdin: IO[str] = sys.stdin, out: TextIO = sys.stdout, env_file: Path = ENV_FILE) -> int:
    """Ask, check, write `env_file`; 0 when written, 1 when input ended first, 130 on Ctrl-C."""
    ask = Prompter(stdin, out)
    current = _in_env(env_file, (TOKEN, BASE_URL, API_KEY, MODEL, TIMEZONE), DEFAULTS)
    base = load_settings(env_file if env_file.exists() else None)
    ask.say(f"Mnemo setup: writes {env_file}. Enter keeps the value in [brackets].\n")
    try:
        answers = _questions(ask, current, base)
    except (Stopped, KeyboardInterrupt) as stop:
        ask.say(f"\nSetup stopped: {env_file} was not changed.")
        return 130 if isinstance(stop, KeyboardInterrupt) else 1
    _write(env_file, answers | docker_ids())
    ask.say(f"\nSaved {env_file} (only you can read it).")
    _next_steps(ask, load_settings(env_file))
    return 0


def _questions(ask: Prompter, current: dict[str, str], base: Settings) -> dict[str, str]:
    ask.say("1. Telegram: the bot token @BotFather gave you (/newbot).")
    token = _token(ask, current.get(TOKEN), base)
    ask.say("\n2. The model: any OpenAI-compatible endpoint (OpenAI, OpenRouter, Ollama, vLLM …).")
    llm = _model(ask, current, base)
    ask.say("\n3. Your time zone, for dates and times in memory (an IANA name).")
    zone = current.get(TIMEZONE) or local_zone() or DEFAULT_ZONE
    while (timezone := ask.ask("Time zone", zone)) and not _known_zone(timezone):
        ask.say(
            f"   {timezone!r} is not a time zone name: e.g. Europe/Berlin, America/New_York, UTC"
        )
    return {TOKEN: token, **llm, TIMEZONE: timezone}


def _token(ask: Prompter, known: str | None, base: Settings) -> str:
    while True:
        value = ask.ask("Bot token", known, secret=True)
        if not value:
            ask.say("   This one is needed.")
            continue
        if _failure(ask, check_telegram(_with(base, token=value)), base, value) is None:
            return value
        known = None if known == value else known  # what failed is not offered again


def _model(ask: Prompter, current: dict[str, str], base: Settings) -> dict[str, str]:
    known = {key: current[key] for key in (BASE_URL, API_KEY, MODEL) if key in current}
    while True:
        typed = {BASE_URL: ask.ask("Endpoint (base URL)", known.get(BASE_URL))}
        typed[API_KEY] = ask.ask(KEY_QUESTION, known.get(API_KEY), secret=True)
        typed[MODEL] = ask.ask("Model name", known.get(MODEL))
        if not all(typed.values()):
            ask.say("   Each of these is needed.")
            continue
        settings = _with(base, base_url=typed[BASE_URL], api_key=typed[API_KEY], model=typed[MODEL])
        failure = _failure(ask, check_model(settings), base, typed[API_KEY])
        if failure is None or (_may_come_up(failure) and _kept_anyway(ask)):
            return typed
        blamed = _blamed(failure, typed)
        known = {k: v for k, v in typed.items() if k not in blamed}  # Enter keeps the others
        known |= {k: current[k] for k in blamed if current.get(k, typed[k]) != typed[k]}


def _failure(
    ask: Prompter, check: Coroutine[Any, Any, object], base: Settings, secret: str
) -> Exception | None:
    """Run `check` (in an event loop of its own: Ctrl-C stops it); what failed, said, or None."""
    ask.say("   checking …")
    try:
        finding = asyncio.run(check)
    except Exception as exc:
        why = TOKEN_REJECTED if is_rejected_token(exc) else what_failed(exc, base)
        ask.say(f"   That did not work: {_scrubbed(why, secret).rstrip('.')}. Try again.")
        return exc
    ask.say(f"   ok: {getattr(finding, 'text', finding)}")
    return None


def _blamed(failure: Exception, typed: dict[str, str]) -> tuple[str, ...]:
    """The answers a model's failure says are wrong (all of them when it does not say)."""
    if isinstance(failure, LLMError):
        return BLAMED.get(failure.cause, tuple(typed))
    return (BASE_URL,) if type(failure) is StartupError else tuple(typed)  # no answer in time


def _may_come_up(failure: Exception) -> bool:
    """A server that did not answer (not started yet, busy), rather than one that said no."""
    return isinstance(failure, LLMUnavailable) or type(failure) is StartupError


def _kept_anyway(ask: Prompter) -> bool:
    if not ask.yes("   Save these anyway, unchecked (a local model not started yet)?"):
        return False
    ask.say("   Saved unchecked: when the bot starts, it says in one line if the model still")
    ask.say("   does not answer (make doctor checks it at any time).")
    return True


def _with(base: Settings, **values: str) -> Settings:
    """The settings with the answers given so far in place of the current ones."""
    telegram = base.telegram
    if "token" in values:
        telegram = telegram.model_copy(update={"token": SecretStr(values["token"])})
    llm = base.llm
    if "model" in values:
        update = {k: v for k, v in values.items() if k in ("base_url", "model")}
        llm = llm.model_copy(update={**update, "api_key": SecretStr(values["api_key"])})
    return base.model_copy(update={"telegram": telegram, "llm": llm})


def _scrubbed(text: str, secret: str) -> str:
    return text.replace(secret, "[REDACTED]") if len(secret) >= 4 else text


def _known_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def local_zone() -> str | None:
    """This machine's IANA time zone name (TZ, /etc/timezone, /etc/localtime), if it says."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    target = os.path.realpath("/etc/localtime")
    if "zoneinfo/" in target:
        candidates.append(target.split("zoneinfo/", 1)[1])
    return next((name for name in candidates if name and _known_zone(name)), None)


# ----------------------------------------------------------------------------- .env


def _in_env(env_file: Path, keys: Iterable[str], defaults: dict[str, str]) -> dict[str, str]:
    """The values of `keys` now in `env_file`, else in the environment, else the defaults."""
    written = {k: v for k, v in dotenv_values(env_file).items() if v} if env_file.exists() else {}
    return {k: v for k in keys if (v := written.get(k) or os.environ.get(k) or defaults.get(k))}


def docker_ids() -> dict[str, str]:
    """The user and group Docker's container should run as: this one's (none on Windows)."""
    if not hasattr(os, "getuid"):
        return {}
    return {"MNEMO_UID": str(os.getuid()), "MNEMO_GID": str(os.getgid())}


def _write(env_file: Path, values: dict[str, str]) -> None:
    """`env_file` with `values` set in place (other lines kept), atomically, mode 0600."""
    if env_file.exists():
        text = env_file.read_text(encoding="utf-8")
        os.chmod(env_file, 0o600)  # the atomic write keeps an existing file's mode
    else:
        text = EXAMPLE_FILE.read_text(encoding="utf-8") if EXAMPLE_FILE.exists() else ""
    atomic_write_text(env_file, updated(text, values))
    os.chmod(env_file, 0o600)


def updated(text: str, values: dict[str, str]) -> str:
    """Dotenv `text` with each `KEY=value` line of `values` replaced, or added at the end."""
    lines = text.splitlines()
    left = dict(values)
    for number, line in enumerate(lines):
        key = line.split("=", 1)[0].strip().removeprefix("export ").strip()
        if "=" in line and key in left:
            lines[number] = f"{key}={_quoted(left.pop(key))}"
    lines += [f"{key}={_quoted(value)}" for key, value in left.items()]
    return "\n".join(lines) + "\n"


def _quoted(value: str) -> str:
    if _PLAIN.fullmatch(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


# ----------------------------------------------------------------------------- what next


def _next_steps(ask: Prompter, settings: Settings) -> None:
    """How to start the bot, and how to become its owner."""
    ask.say(f"Next: make run (or {shell.command('run')}) starts the bot.")
    if settings.telegram.owner_ids:
        ask.say("Owners are set (BOT_TELEGRAM__OWNER_IDS): write to your bot in Telegram.")
        return
    try:
        code = asyncio.run(_claim_code(settings))
    except (ConfigError, MnemoError, OSError) as exc:
        ask.say(f"Then: {shell.command('pair list')} shows the claim code ({exc}).")
        return
    if code is None:
        ask.say("The bot has an owner already: write to it in Telegram.")
        return
    ask.say(f"Then, in Telegram, send your bot this in a private chat: /claim {grouped(code)}")
    ask.say(f"That makes you its owner. ({shell.command('pair list')} shows the code again.)")


async def _claim_code(settings: Settings) -> str | None:
    workspace = Workspace(settings.workspace)
    await asyncio.to_thread(workspace.ensure)
    async with roster_only(settings, workspace) as roster:
        door = Door.from_settings(settings.telegram, roster, clock(settings.timezone))
        await door.start()
        return door.claim_code
