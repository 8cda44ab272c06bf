"""The `.env` file setup writes: the values it holds now (else the environment's, else the
defaults), and the file written again with new values in place — its other lines kept, odd
values quoted, atomically, mode 0600 (a new one starts from `.env.example`). With the values
setup asks for go the ids Docker's container runs as (`MNEMO_UID`, `MNEMO_GID`: this user's),
so the files it writes in `./workspace` stay the person's without editing `.env` by hand.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from dotenv import dotenv_values

from bot.storage.files import atomic_write_text

ENV_FILE = Path(".env")
EXAMPLE_FILE = Path(".env.example")
_PLAIN = re.compile(r"[^\s#'\"\\$`]*")  # written as is; anything else in double quotes


def current(env_file: Path, keys: Iterable[str], defaults: dict[str, str]) -> dict[str, str]:
    """The values of `keys` now in `env_file`, else in the environment, else the defaults."""
    written = {k: v for k, v in dotenv_values(env_file).items() if v} if env_file.exists() else {}
    return {k: v for k in keys if (v := written.get(k) or os.environ.get(k) or defaults.get(k))}


def docker_ids() -> dict[str, str]:
    """The user and group Docker's container should run as: this one's (none on Windows)."""
    if not hasattr(os, "getuid"):
        return {}
    return {"MNEMO_UID": str(os.getuid()), "MNEMO_GID": str(os.getgid())}


def write(env_file: Path, values: dict[str, str]) -> None:
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
