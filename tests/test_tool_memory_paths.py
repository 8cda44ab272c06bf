"""`memory_get`'s path rules, directly: citations parsed, refusals, who may read which file."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ToolError
from bot.models import GLOBAL_SCOPE, MemoryScope
from bot.tools.memory_get import (
    Citation,
    parse_citation,
    read_slice,
    readable,
    resolve,
    window,
)

OWNER_KEY = "telegram:1001"
GROUP_KEY = "telegram:-100500"
GROUP = MemoryScope(chat_key=GROUP_KEY)
OWN_CHAT = "chats/telegram%3A1001"
GROUP_DIR = "chats/telegram%3A-100500"


def refusal(raw: str) -> str:
    with pytest.raises(ToolError) as caught:
        parse_citation(raw)
    return str(caught.value)


# ----------------------------------------------------------------------------- parse_citation


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("MEMORY.md", Citation("MEMORY.md")),
        ("memory/MEMORY.md", Citation("MEMORY.md")),
        ("  ./2026-11-20.md ", Citation("2026-11-20.md")),
        ("2026-11-20.md#L3-L9", Citation("2026-11-20.md", 3, 9)),
        ("memory/2026-11-20.md#L3-9", Citation("2026-11-20.md", 3, 9)),
        ("HISTORY.md#L12", Citation("HISTORY.md", 12, None)),
        (f"{GROUP_DIR}/MEMORY.md#L1-L2", Citation(f"{GROUP_DIR}/MEMORY.md", 1, 2)),
        ("items/semantic.jsonl#s-1a2b3c#L1-L1", Citation("items/semantic.jsonl", item="s-1a2b3c")),
        ("s-1a2b3c4d5e", Citation("", item="s-1a2b3c4d5e")),  # `# Relevant Memory`'s form
        ("e20261120-0f", Citation("", item="e20261120-0f")),
        (
            "items/episodic/2026-11-20.jsonl#e20261120-0f",
            Citation("items/episodic/2026-11-20.jsonl", item="e20261120-0f"),
        ),
    ],
)
def test_paths_and_citations_are_parsed(raw: str, expected: Citation) -> None:
    assert parse_citation(raw) == expected


@pytest.mark.parametrize(
    "raw", ["/etc/passwd", "memory//etc/passwd", "\\\\server\\share", "C:/Users/x", "~/notes.md"]
)
def test_absolute_paths_are_refused(raw: str) -> None:
    assert "absolute paths are refused" in refusal(raw)


@pytest.mark.parametrize("raw", ["../state/inbox.json", "chats/../../sessions/x.json", "a/../b"])
def test_parent_steps_are_refused(raw: str) -> None:
    assert "'..' is refused" in refusal(raw)


def test_a_session_citation_is_a_past_conversation_not_a_file() -> None:
    message = refusal("sessions/telegram%3A1001#turn-7#L1-L2")

    assert "past conversation, not a file" in message


def test_backslashes_and_garbage_are_refused() -> None:
    assert "use /" in refusal("chats\\x\\MEMORY.md")
    for garbage in ("MEMORY.md#L", "memory/", "#L1", "a.md#L1#L2", "a.md#x#y"):
        assert "relative to memory/" in refusal(garbage), garbage
    assert "LightRAG server, not a file" in refusal("lightrag:exchange-7")


# ----------------------------------------------------------------------------- readable


def test_the_owner_reads_global_files_and_the_own_chat_folder() -> None:
    def owner(path: str) -> bool:
        return readable(path.split("/"), GLOBAL_SCOPE, OWNER_KEY)

    assert owner("MEMORY.md")
    assert owner("2026-11-20.md")
    assert owner("items/semantic.jsonl")
    assert owner(f"{OWN_CHAT}/MEMORY.md")
    assert owner("working/telegram%3A1001.md")
    assert not owner(f"{GROUP_DIR}/MEMORY.md")
    assert not owner("working/telegram%3A-100500.md")
    assert not owner("chats/telegram%3A1001")  # a folder name alone is no file


def test_a_group_reads_only_its_own_folder_and_working_memory() -> None:
    def group(path: str) -> bool:
        return readable(path.split("/"), GROUP, GROUP_KEY)

    assert group(f"{GROUP_DIR}/MEMORY.md")
    assert group(f"{GROUP_DIR}/items/semantic.jsonl")
    assert group("working/telegram%3A-100500.md")
    assert not group("MEMORY.md")
    assert not group("2026-11-20.md")
    assert not group(f"{OWN_CHAT}/MEMORY.md")
    assert not group("chats/telegram%3A-999/MEMORY.md")
    assert not group("working/telegram%3A1001.md")
    assert not group("chats/telegram:-100500/MEMORY.md")  # not the folder's name on disk


# ----------------------------------------------------------------------------- resolve


@pytest.fixture
def root(tmp_path: Path) -> Path:
    memory = tmp_path / "ws" / "memory"
    (memory / GROUP_DIR).mkdir(parents=True)
    (memory / OWN_CHAT).mkdir(parents=True)
    (memory / "MEMORY.md").write_text("owner's secret\n")
    (memory / GROUP_DIR / "MEMORY.md").write_text("group fact\n")
    (tmp_path / "outside.txt").write_text("not memory\n")
    return memory


def test_a_groups_symlink_out_of_its_folder_is_refused(root: Path) -> None:
    (root / GROUP_DIR / "escape.md").symlink_to(root.parent.parent / "outside.txt")
    (root / GROUP_DIR / "peek.md").symlink_to(root / "MEMORY.md")

    with pytest.raises(ToolError, match="leads outside its memory folder"):
        resolve(root, f"{GROUP_DIR}/escape.md", GROUP, GROUP_KEY)
    with pytest.raises(ToolError, match="leads outside its memory folder"):
        resolve(root, f"{GROUP_DIR}/peek.md", GROUP, GROUP_KEY)


def test_the_owners_symlink_may_lead_out_of_the_workspace_but_not_into_its_other_files(
    root: Path,
) -> None:
    (root / "synced.md").symlink_to(root.parent.parent / "outside.txt")
    (root / "state.md").symlink_to(root.parent / "state" / "secret.txt")
    (root / "group.md").symlink_to(root / GROUP_DIR / "MEMORY.md")

    assert resolve(root, "synced.md", GLOBAL_SCOPE, OWNER_KEY) == root / "synced.md"
    for refused in ("state.md", "group.md"):
        with pytest.raises(ToolError, match="leads outside its memory folder"):
            resolve(root, refused, GLOBAL_SCOPE, OWNER_KEY)


def test_a_symlink_inside_the_visible_memory_is_followed(root: Path) -> None:
    (root / "latest.md").symlink_to(root / "MEMORY.md")

    assert resolve(root, "latest.md", GLOBAL_SCOPE, OWNER_KEY) == root / "latest.md"


def test_another_chats_folder_is_refused_before_the_disk_is_asked(root: Path) -> None:
    with pytest.raises(ToolError, match="not part of this chat's memory"):
        resolve(root, "chats/telegram%3A-999/MEMORY.md", GROUP, GROUP_KEY)


# ----------------------------------------------------------------------------- slices


def test_a_slice_keeps_the_file_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    path.write_text("\n".join(f"line {n}" for n in range(1, 11)) + "\n")

    found = read_slice(path, 4, 3)

    assert found is not None
    assert found.lines == ((4, "line 4"), (5, "line 5"), (6, "line 6"))
    assert found.total == 10


def test_missing_binary_and_folder(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)

    assert read_slice(tmp_path / "nope.md", 1, 10) is None
    with pytest.raises(ToolError, match="not text"):
        read_slice(tmp_path / "blob.bin", 1, 10)
    with pytest.raises(ToolError, match="folder"):
        read_slice(tmp_path, 1, 10)


def test_the_window_comes_from_the_arguments_then_the_citation_then_defaults() -> None:
    cited = Citation("a.md", 3, 9)

    assert window({}, Citation("a.md")) == (1, 40)
    assert window({}, cited) == (3, 7)
    assert window({"lines": 2}, cited) == (3, 2)
    assert window({"from_line": 5}, cited) == (5, 7)
    assert window({"from_line": 0, "lines": 1000}, Citation("a.md")) == (1, 200)
    with pytest.raises(ToolError, match="`lines` must be an integer"):
        window({"lines": "ten"}, cited)
