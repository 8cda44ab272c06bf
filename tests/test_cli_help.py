"""`python -m bot --help`, and each command's, is written for the person typing it (what the
command does for them, no developer's notes) and is quick: parsing imports nothing of the bot
(checked by what a real `python -m bot … --help` process has imported, not by a clock). The
Docker health check, which runs every minute, imports none of the bot's running parts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.main import COMMANDS
from tests.harness import REPO

# what the bot's running parts pull in: none of it is needed to print a command's help
HEAVY = {"telegram", "openai", "httpx", "httpx2", "numpy", "rich", "tiktoken", "structlog"}
HEAVY_FOR_HELP = HEAVY | {"pydantic", "pydantic_settings", "dotenv"}
PROBE = """
import json, runpy, sys
sys.argv = ["bot", *sys.argv[1:]]
try:
    runpy.run_module("bot", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def run(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> tuple[str, set[str]]:
    """What `python -m bot ARGS` printed, and the modules it had imported at its end."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    *printed, modules = done.stdout.splitlines()
    return "\n".join(printed), set(json.loads(modules))


def tops(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


@pytest.mark.parametrize("args", [[], *([c.name] for c in COMMANDS)], ids=str)
def test_help_imports_nothing_of_the_bot(args: list[str]) -> None:
    printed, modules = run(*args, "--help")

    assert printed.startswith("usage: python -m bot")
    assert tops(modules).isdisjoint(HEAVY_FOR_HELP), tops(modules) & HEAVY_FOR_HELP
    ours = {name for name in modules if name.split(".")[0] == "bot"}
    assert ours <= {"bot", "bot.__main__", "bot.cli", "bot.cli.main"}, ours


def test_the_help_is_written_for_the_person_typing_it() -> None:
    printed, _ = run("--help")

    assert "Mnemo" in printed and ".venv/bin/python -m bot" in printed
    for command in COMMANDS:
        assert command.name in printed
    for developer_words in ("Thin:", "bot.cli", "hand over", "ConfigError", "Scrubber"):
        assert developer_words not in printed


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_command_says_what_it_does(command: object) -> None:
    name = getattr(command, "name")  # noqa: B009 - the parametrized value, typed loosely
    printed, _ = run(name, "--help")
    usage, _, rest = printed.partition("\n\n")

    assert usage.startswith(f"usage: python -m bot {name}")
    description = rest.split("\n\n")[0]
    assert not description.startswith(("options:", "positional arguments:")), printed
    assert len(description.split()) >= 8, printed  # a sentence, not a bare usage line
    assert not re.search(r"\bbot\.\w", description)  # no module names


def test_the_health_check_loads_none_of_the_bots_running_parts(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "BOT_WORKSPACE": str(tmp_path)}
    env["BOT_CONFIG_FILE"] = str(REPO / "config" / "settings.toml")
    printed, modules = run("health", cwd=tmp_path, env=env)

    assert printed.startswith("unhealthy: no heartbeat")  # it did run
    running = {"telegram", "openai", "httpx2", "numpy", "tiktoken"}  # logs may use the rest
    assert tops(modules).isdisjoint(running), tops(modules) & running
    assert not any(m.startswith(("bot.app", "bot.channels", "bot.index")) for m in modules)
