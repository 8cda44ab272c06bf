"""`python -m bot prompt --chat KEY`, run as a user runs it: a process over a workspace, with no
Telegram token, no model key and no model to reach (its URL is a closed port)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.harness import OWNER, REPO
from tests.talk import GROUP, GROUP_DIR, write, write_session

OWNER_CHAT = f"telegram:{OWNER}"
GROUP_CHAT = f"telegram:{GROUP}"
EARLIER = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root, "MEMORY.md", "The boat is moored at pier seven.\n")
    write(root, f"{GROUP_DIR}/MEMORY.md", "The group keeps its kayak at pier nine.\n")
    exchange = [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "Hello! How can I help?"},
    ]
    write_session(root, exchange, updated_at=EARLIER, key=OWNER_CHAT)
    write_session(root, exchange[:1], updated_at=EARLIER, key=GROUP_CHAT)
    return root


def prompt(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workspace.parent),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        "BOT_WORKSPACE": str(workspace),
        "BOT_TELEGRAM__OWNER_IDS": f"[{OWNER}]",
        "BOT_LLM__BASE_URL": "http://127.0.0.1:9/v1",  # nothing listens: no call may succeed
    }
    return subprocess.run(
        [sys.executable, "-m", "bot", "prompt", *args],
        cwd=workspace.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_parts_of_the_next_prompt_with_their_tokens(workspace: Path) -> None:
    done = prompt(workspace, "--chat", OWNER_CHAT, "--message", "where is my boat?")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"The next message in {OWNER_CHAT} would send")
    labels = [line.rsplit("  ", 1)[0].rstrip() for line in lines[2:] if line.strip()]
    assert labels[:3] == ["persona", "instructions", "# Memory"]
    assert "  ## Long-term Memory" in labels
    assert "conversation (2 messages)" in labels and "the user's message" in labels
    assert lines[-2].startswith("total") and lines[-2].endswith("counted offline")
    assert lines[-1].startswith("Context: ") and " of " in lines[-1]  # as /status says it
    assert "pier seven" not in done.stdout  # the text only with --full


def test_full_prints_the_whole_prompt_and_a_group_sees_only_its_memory(workspace: Path) -> None:
    owner = prompt(workspace, "--chat", OWNER_CHAT, "--full", "--message", "boat?")
    group = prompt(workspace, "--chat", GROUP_CHAT, "--full")

    assert owner.returncode == 0, owner.stderr
    assert "The boat is moored at pier seven." in owner.stdout
    assert "Hello! How can I help?" in owner.stdout
    assert "======================== user ========================\nboat?" in owner.stdout
    assert '"name": "memory_search"' in owner.stdout  # the tools' definitions
    assert group.returncode == 0, group.stderr
    assert "kayak at pier nine" in group.stdout
    assert "pier seven" not in group.stdout


def test_without_a_known_chat_it_lists_the_chats(workspace: Path) -> None:
    listed = prompt(workspace)
    unknown = prompt(workspace, "--chat", "telegram:424242")

    assert listed.returncode == 0
    assert f"chats: {GROUP_CHAT}, {OWNER_CHAT}" in listed.stdout
    assert unknown.returncode == 1
    assert "no conversation for the chat 'telegram:424242'" in unknown.stderr
    assert f"chats: {GROUP_CHAT}, {OWNER_CHAT}" in unknown.stderr
    assert not (workspace / "sessions" / "telegram_424242.json").exists()
