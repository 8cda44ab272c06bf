"""`python -m bot memory search | reindex | stats`, run as a user runs them: a process over a
workspace, with no Telegram token and no model key."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.harness import OWNER, REPO, SMALL_MODEL2VEC
from tests.talk import GROUP, GROUP_DIR, write, write_session

MODEL2VEC = SMALL_MODEL2VEC
CHAT = f"telegram:{GROUP}"
AT = "2026-11-20T09:00:00+00:00"


def item(item_id: str, text: str) -> str:
    fields = {"version": 1, "id": item_id, "layer": "semantic", "type": "fact", "text": text,
              "fingerprint": item_id, "created_at": AT, "updated_at": AT}  # fmt: skip
    return json.dumps(fields) + "\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root, "MEMORY.md", "# Boat\nThe boat is moored at pier seven.\n")
    write(root, "2026-11-20.md", "[09:15] User: buy oat milk | Assistant: Noted, oat milk.\n")
    write(root, "items/semantic.jsonl", item("s-00000000a1", "Ann drinks oat milk in her tea."))
    write(root, f"{GROUP_DIR}/MEMORY.md", "The group keeps its boat at pier nine.\n")
    write(
        root, f"{GROUP_DIR}/items/semantic.jsonl", item("s-00000000b2", "The group likes oat bars.")
    )
    return root


def bot(workspace: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m bot <args>` with the workspace and nothing secret in its environment."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workspace.parent),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        "BOT_WORKSPACE": str(workspace),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=workspace.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def hits(output: str) -> list[str]:
    """The citations of `search`'s output, in order."""
    return re.findall(r"^\d+\. (\S+) · [\w -]+ · \d{4}-\d\d-\d\d$", output, re.M)


def test_search_shows_global_memory_by_default_and_one_chat_with_chat(workspace: Path) -> None:
    owner = bot(workspace, "memory", "search", "oat milk boat pier")
    group = bot(workspace, "memory", "search", "oat milk boat pier", "--chat", CHAT)

    assert owner.returncode == 0, owner.stderr
    assert set(hits(owner.stdout)) == {
        "MEMORY.md#L1-L2",
        "2026-11-20.md#L1-L1",
        "items/semantic.jsonl#s-00000000a1#L1-L1",
    }
    assert "   [09:15] User: buy oat milk | Assistant: Noted, oat milk." in owner.stdout
    assert "pier nine" not in owner.stdout and "oat bars" not in owner.stdout
    assert set(hits(group.stdout)) == {  # the chat as a person reads it, not its file name
        f"chats/{CHAT}/MEMORY.md#L1-L1",
        f"chats/{CHAT}/items/semantic.jsonl#s-00000000b2#L1-L1",
    }
    assert "pier seven" not in group.stdout and "Ann" not in group.stdout


def test_search_sees_a_hand_edit_and_keeps_to_k(workspace: Path) -> None:
    assert bot(workspace, "memory", "search", "kayak").stdout == "no matches\n"
    write(
        workspace,
        "2026-11-21.md",
        "".join(f"[10:0{n}] User: kayak {n} | Assistant: ok\n" for n in range(5)),
    )

    found = bot(workspace, "memory", "search", "kayak", "--k", "1")

    assert hits(found.stdout) == ["2026-11-21.md#L1-L5"]


def test_reindex_rebuilds_a_deleted_index_with_every_item(workspace: Path) -> None:
    before = bot(workspace, "memory", "search", "oat")
    shutil.rmtree(workspace / "index")

    rebuilt = bot(workspace, "memory", "reindex")
    after = bot(workspace, "memory", "search", "oat")

    assert rebuilt.returncode == 0, rebuilt.stderr
    assert re.fullmatch(r"reindexed 5 files and 2 items in \d+\.\d\d s\n", rebuilt.stdout)
    assert hits(after.stdout) == hits(before.stdout) != []


def test_stats_describe_the_index_the_items_and_the_files(workspace: Path) -> None:
    found = bot(workspace, "memory", "stats")

    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0] == f"index     {workspace / 'index'}  embedder: none (keyword only)"
    assert lines[1:] == [
        "chunks    item 2, memory 2, note 1  (5 in all)",
        "files     5 indexed, 0 vectors",
        "items     global: episodic 0, semantic 1, procedural 0",
        f"items     {CHAT}: episodic 0, semantic 1, procedural 0",
        "markdown  memory 2, note 1",
    ]


def test_the_local_embedder_is_used_when_configured(workspace: Path) -> None:
    found = bot(
        workspace,
        "memory",
        "stats",
        BOT_RAG__EMBEDDER="model2vec",
        BOT_RAG__MODEL2VEC_PATH=str(MODEL2VEC),
    )

    assert found.returncode == 0, found.stderr
    assert "embedder: model2vec:minilm-m2v-small:256" in found.stdout
    assert "files     5 indexed, 5 vectors" in found.stdout


def test_a_missing_model_or_key_is_named(workspace: Path) -> None:
    model = bot(
        workspace,
        "memory",
        "search",
        "oat",
        BOT_RAG__EMBEDDER="model2vec",
        BOT_RAG__MODEL2VEC_PATH=str(workspace / "no-model"),
    )
    key = bot(workspace, "memory", "search", "oat", BOT_RAG__EMBEDDER="openai")

    assert model.returncode == 2
    assert model.stderr.startswith("error: BOT_RAG__MODEL2VEC_PATH ")
    assert key.returncode == 2
    assert key.stderr.startswith("error: BOT_RAG__EMBEDDING_API_KEY (or BOT_LLM__API_KEY)")


def test_search_reads_like_an_answer_and_nothing_else_reaches_the_terminal(
    workspace: Path,
) -> None:
    write(workspace, "MEMORY.md", "# Home\nThe spare key is under the blue pot.\n")
    write(workspace, "2026-11-22.md", "[08:00] User: where is the spare key?\n")

    found = bot(workspace, "memory", "search", "Where is the spare key?")

    assert found.returncode == 0, found.stderr
    assert found.stderr == ""  # no log line (they go to logs/cli.log)
    assert "index_opened" in (workspace / "logs" / "cli.log").read_text(encoding="utf-8")
    assert hits(found.stdout)[0] == "MEMORY.md#L1-L2"
    assert hits(found.stdout)[-1] == "2026-11-22.md#L1-L1"  # the question itself comes last
    assert found.stdout.startswith("1. MEMORY.md#L1-L2 · long-term memory · "), found.stdout
    assert "\n   The spare key is under the blue pot.\n" in found.stdout
    assert "score" not in found.stdout
    assert not re.search(r"\b0\.\d{3,}", found.stdout)  # no fused scores


def test_a_question_asked_before_comes_after_the_fact_even_with_what_was_answered(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    write(workspace, "MEMORY.md", "# Home\n- Spare key: under the blue pot by the door.\n")
    said = "I do not know where the spare key is."
    asked = f"[08:00] User: where is the spare key? | Assistant: {said}\n"
    write(workspace, "2026-11-22.md", asked)  # the index ranks this one first: more of its words

    found = bot(workspace, "memory", "search", "where is the spare key")

    assert hits(found.stdout) == ["MEMORY.md#L1-L2", "2026-11-22.md#L1-L1"], found.stdout


def test_a_conversation_names_its_chat_as_a_person_reads_it(workspace: Path) -> None:
    at = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    said = [
        {"role": "user", "content": "The kayak is in the blue shed.", "timestamp": at.isoformat()},
        {"role": "assistant", "content": "Noted.", "timestamp": at.isoformat()},
    ]
    write_session(workspace, said, updated_at=at)  # a chat's own (no global scope marked)

    found = bot(workspace, "memory", "search", "kayak shed", "--chat", f"telegram:{OWNER}")

    assert found.returncode == 0, found.stderr
    [conversation] = [c for c in hits(found.stdout) if c.startswith("sessions/")]
    assert conversation.startswith(f"sessions/telegram:{OWNER}#"), found.stdout
    assert "%3A" not in found.stdout


def test_a_chat_with_no_match_says_where_else_to_look(workspace: Path) -> None:
    found = bot(workspace, "memory", "search", "kayak", "--chat", f"telegram:{OWNER}")

    assert found.stdout == (
        f"no matches in telegram:{OWNER}'s memory (the memory of your own private chats is "
        "searched without --chat)\n"
    )
