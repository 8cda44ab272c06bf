"""`python -m bot setup` (`make setup`): asks for what the bot needs, checks it, writes `.env`.

    Telegram bot token   checked with getMe (the bot's @username is shown)
    model endpoint, API key, model name   checked with a one-token request
    time zone            an IANA name (Europe/Berlin); the machine's own is offered

Each question shows the current value in brackets (a secret only as "set"), and Enter keeps it,
so a rerun changes only what is typed. A value that fails its check is asked again; the end of
input stops setup with nothing written. Answers are read a line at a time from stdin (piped
answers work: no terminal needed); a secret typed at a terminal is not echoed. `.env` is written
atomically with permissions 0600, keeping its other lines (a new one starts from
`.env.example`). Last, setup says how to claim the bot: `/claim CODE`, the code kept in the
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TextIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dotenv import dotenv_values
from pydantic import SecretStr

from bot.app import clock
from bot.app.store import roster_only
from bot.app.turn import build_door
from bot.cli.doctor import check_model, check_telegram, what_failed
from bot.errors import ConfigError, MnemoError
from bot.settings import Settings, load_settings
from bot.storage.files import atomic_write_text
from bot.storage.workspace import Workspace
from bot.turn.pairing import grouped

ENV_FILE = Path(".env")
EXAMPLE_FILE = Path(".env.example")
TOKEN = "BOT_TELEGRAM__TOKEN"
BASE_URL = "BOT_LLM__BASE_URL"
API_KEY = "BOT_LLM__API_KEY"
MODEL = "BOT_LLM__MODEL"
TIMEZONE = "BOT_TIMEZONE"
DEFAULTS = {BASE_URL: "https://api.openai.com/v1", MODEL: "gpt-4o-mini"}
DEFAULT_ZONE = "UTC"  # when neither .env nor this machine names one
_PLAIN = re.compile(r"[^\s#'\"\\$`]*")  # written as is; anything else in double quotes


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

    def say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()


def command(settings: Settings, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    return run()


def run(*, stdin: IO[str] = sys.stdin, out: TextIO = sys.stdout, env_file: Path = ENV_FILE) -> int:
    """Ask, check, write `env_file`; 0 when written, 1 when input ended first."""
    ask = Prompter(stdin, out)
    current = _current(env_file)
    base = load_settings(env_file if env_file.exists() else None)
    ask.say(f"Mnemo setup: writes {env_file}. Enter keeps the value in [brackets].\n")
    try:
        answers = asyncio.run(_questions(ask, current, base))
    except Stopped:
        ask.say(f"Setup stopped: {env_file} was not changed.")
        return 1
    _write(env_file, answers)
    ask.say(f"\nSaved {env_file} (only you can read it).")
    _next_steps(ask, load_settings(env_file))
    return 0


async def _questions(ask: Prompter, current: dict[str, str], base: Settings) -> dict[str, str]:
    ask.say("1. Telegram: the bot token @BotFather gave you (/newbot).")
    token = await _checked(
        lambda: ask.ask("Bot token", current.get(TOKEN), secret=True),
        lambda value: check_telegram(_with(base, token=value)),
        ask,
        base,
    )
    ask.say("\n2. The model: any OpenAI-compatible endpoint (OpenAI, OpenRouter, Ollama, vLLM …).")
    llm: dict[str, str] = {}

    def model_answers() -> str:  # again after a failed check: Enter keeps what was typed
        was = current | llm
        llm[BASE_URL] = ask.ask("Endpoint (base URL)", was.get(BASE_URL))
        llm[API_KEY] = ask.ask(
            "API key (any text for a local server)", was.get(API_KEY), secret=True
        )
        llm[MODEL] = ask.ask("Model name", was.get(MODEL))
        return llm[MODEL]

    await _checked(
        model_answers,
        lambda _: check_model(
            _with(base, base_url=llm[BASE_URL], api_key=llm[API_KEY], model=llm[MODEL])
        ),
        ask,
        base,
    )
    ask.say("\n3. Your time zone, for dates and times in memory (an IANA name).")
    zone = current.get(TIMEZONE) or local_zone() or DEFAULT_ZONE
    while (timezone := ask.ask("Time zone", zone)) and not _known_zone(timezone):
        ask.say(
            f"   {timezone!r} is not a time zone name: e.g. Europe/Berlin, America/New_York, UTC"
        )
    return {TOKEN: token, **llm, TIMEZONE: timezone}


async def _checked(
    answer: Callable[[], str],
    check: Callable[[str], Awaitable[object]],
    ask: Prompter,
    base: Settings,
) -> str:
    """Ask (`answer`) until `check` passes with what was answered; what it said, on the way."""
    while True:
        value = answer()
        if not value.strip():
            ask.say("   This one is needed.")
            continue
        ask.say("   checking …")
        try:
            finding = await check(value)
        except Exception as exc:
            why = _scrubbed(what_failed(exc, base), value).rstrip(".")
            ask.say(f"   That did not work: {why}. Try again.")
            continue
        ask.say(f"   ok: {getattr(finding, 'text', finding)}")
        return value


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


def _current(env_file: Path) -> dict[str, str]:
    """The values now in `env_file`, else in the environment, else the defaults."""
    written = {k: v for k, v in dotenv_values(env_file).items() if v} if env_file.exists() else {}
    keys = (TOKEN, BASE_URL, API_KEY, MODEL, TIMEZONE)
    return {k: v for k in keys if (v := written.get(k) or os.environ.get(k) or DEFAULTS.get(k))}


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
    python = _python()
    ask.say(f"Next: make run (or {python} -m bot run) starts the bot.")
    if settings.telegram.owner_ids:
        ask.say("Owners are set (BOT_TELEGRAM__OWNER_IDS): write to your bot in Telegram.")
        return
    try:
        code = asyncio.run(_claim_code(settings))
    except (ConfigError, MnemoError, OSError) as exc:
        ask.say(f"Then: {python} -m bot pair list shows the claim code ({exc}).")
        return
    if code is None:
        ask.say("The bot has an owner already: write to it in Telegram.")
        return
    ask.say(f"Then, in Telegram, send your bot this in a private chat: /claim {grouped(code)}")
    ask.say(f"That makes you its owner. ({python} -m bot pair list shows the code again.)")


def _python() -> str:
    """How to start this Python from here: `.venv/bin/python` when setup runs from the
    project's venv (`make setup`; a bare `python` lacks the bot's packages), else `python`."""
    here = Path(sys.executable)
    return str(here.relative_to(Path.cwd())) if here.is_relative_to(Path.cwd()) else "python"


async def _claim_code(settings: Settings) -> str | None:
    workspace = Workspace(settings.workspace)
    await asyncio.to_thread(workspace.ensure)
    async with roster_only(settings, workspace) as roster:
        _, door = build_door(settings, roster, clock(settings.timezone))
        await door.start()
        return door.claim_code
