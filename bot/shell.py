"""How a person types one of the bot's commands where the bot runs — the one owner of that
wording, for every hint the bot and its command line print (`python -m bot pair list` alone
fails with a Python that lacks the bot's packages).

`MNEMO_SHELL`, when set, is how to reach the command line from the host (the Docker image sets
`docker compose exec mnemo python -m bot`; replicated mode's compose file names its replica);
else the Python running now, as typed from the folder the bot runs in: `.venv/bin/python -m
bot` after `make run`, the interpreter's own path otherwise. Imports nothing of the bot.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SHELL_VAR = "MNEMO_SHELL"


def command(arguments: str) -> str:
    """`arguments` (e.g. "pair list") as a command that works where the bot runs."""
    return f"{_prefix()} {arguments}"


def in_template(arguments: str) -> str:
    """`command(arguments)` for a `str.format` template: its braces doubled, kept as typed."""
    return command(arguments).replace("{", "{{").replace("}", "}}")


def _prefix() -> str:
    if told := os.environ.get(SHELL_VAR, "").strip():
        return told
    python = Path(sys.executable)
    here = Path.cwd()
    shown = python.relative_to(here) if python.is_relative_to(here) else python
    return f"{shown} -m bot"
