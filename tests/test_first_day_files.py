"""The first day's files: `make run` installs the runtime lock only and `make test` the
developer's (read with `make -n`, nothing installed); the README opens with what Mnemo is, why
it rather than its peers, and a quickstart of commands that exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def planned(target: str, *options: str, venv: Path) -> list[str]:
    """The commands `make TARGET` would run from scratch (every prerequisite remade)."""
    done = subprocess.run(
        ["make", "-n", "-B", target, f"VENV={venv}", *options],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def installed(commands: list[str]) -> list[str]:
    return [m[1] for line in commands if (m := re.search(r"pip install .*-r (\S+)", line))]


@pytest.mark.parametrize("target", ["run", "chat", "doctor", "setup"])
def test_running_the_bot_installs_the_runtime_lock_only(target: str, tmp_path: Path) -> None:
    commands = planned(target, venv=tmp_path / "venv")

    assert installed(commands) == ["requirements.lock"]
    assert any(line.endswith(f"-m bot {target}") for line in commands)
    [editable] = [line for line in commands if line.endswith("-e .")]
    assert "-qq" in editable.split()  # setuptools' editable-install notice stays quiet


def test_the_embedder_level_and_the_developer_level(tmp_path: Path) -> None:
    assert installed(planned("run", "EMBEDDER=1", venv=tmp_path / "v")) == [
        "requirements-embedder.lock"
    ]
    assert set(installed(planned("test", venv=tmp_path / "v"))) == {"requirements-dev.lock"}


def test_the_runtime_lock_holds_no_developer_tool() -> None:
    pinned = {
        line.split("==")[0].strip().lower()
        for line in (REPO / "requirements.lock").read_text().splitlines()
        if "==" in line and not line.startswith((" ", "#"))
    }
    assert pinned
    assert pinned.isdisjoint({"ruff", "mypy", "pytest", "model2vec", "playwright"})


def test_the_readme_says_what_mnemo_is_before_how_to_start_it() -> None:
    before, quickstart = README.split("## Quickstart", 1)
    pitch = before.lower()
    for said in ("markdown", "crash", "private per chat", "openai-compatible", "voice"):
        assert said in pitch, said
    assert "nanobot" in before and "OpenClaw" in before
    assert re.search(r"^You: .*\n^Mnemo: ", before, re.MULTILINE)  # an example chat
    assert len(before.splitlines()) <= 50
    block = quickstart.split("```sh", 1)[1].split("```", 1)[0]
    assert "make setup" in block and "make run" in block
    assert "BOT_TELEGRAM__PROXY" in README and "BOT_LLM__PROXY" in README


def test_every_make_target_the_readme_names_exists(tmp_path: Path) -> None:
    named = set(re.findall(r"`make (\w[\w-]*)", README)) | {"setup", "run", "chat", "doctor"}
    for target in sorted(named):
        planned(target, venv=tmp_path / "venv")  # make -n fails on an unknown target
