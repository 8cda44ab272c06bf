"""`memory_get` through the real app: numbered slices, citations, empty for a missing file, and
every refusal (absolute, `..`, symlink escape, another chat's folder, a past conversation)."""

from __future__ import annotations

from pathlib import Path

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI
from tests.talk import GROUP, GROUP_DIR, OWNER_CHAT_DIR, tool_result, write

NOTE = "2026-11-20.md"
NOTE_TEXT = "".join(f"[09:{n:02d}] User: point {n} | Assistant: noted {n}\n" for n in range(1, 13))


async def get(app: App, fake: FakeOpenAI, chat: int | None = None, **args: object) -> str:
    return await tool_result(app, fake, "memory_get", dict(args), chat=chat)


async def test_a_slice_comes_with_line_numbers_and_the_file_length(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, NOTE, NOTE_TEXT)

    answer = await get(app, fake_openai, path=NOTE, from_line=3, lines=2)

    assert answer == (
        f"{NOTE} lines 3-4 of 12\n"
        "3| [09:03] User: point 3 | Assistant: noted 3\n"
        "4| [09:04] User: point 4 | Assistant: noted 4"
    )


async def test_a_citation_reads_its_range_and_memory_prefix_is_accepted(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, NOTE, NOTE_TEXT)

    answer = await get(app, fake_openai, path=f"memory/{NOTE}#L11-L12")

    assert answer.splitlines()[0] == f"{NOTE} lines 11-12 of 12"
    assert answer.splitlines()[1:] == [
        "11| [09:11] User: point 11 | Assistant: noted 11",
        "12| [09:12] User: point 12 | Assistant: noted 12",
    ]


async def test_the_default_is_forty_lines_and_never_more_than_two_hundred(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "HISTORY.md", "".join(f"entry {n}\n" for n in range(1, 301)))

    first = await get(app, fake_openai, path="HISTORY.md")
    most = await get(app, fake_openai, path="HISTORY.md", from_line=50, lines=500)

    assert first.splitlines()[0] == "HISTORY.md lines 1-40 of 300"
    assert most.splitlines()[0] == "HISTORY.md lines 50-249 of 300"
    assert len(most.splitlines()) == 201


async def test_a_missing_file_or_a_line_past_the_end_is_empty_not_an_error(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, NOTE, NOTE_TEXT)

    assert await get(app, fake_openai, path="2020-01-01.md") == "(empty: no such file)"
    assert await get(app, fake_openai, path=NOTE, from_line=99) == f"(empty: {NOTE} has 12 lines)"


async def test_paths_outside_memory_are_refused(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    outside = workspace / "state" / "secret.txt"
    outside.parent.mkdir(parents=True, exist_ok=True)
    outside.write_text("the bot token\n")
    write(workspace, "MEMORY.md", "fact\n")
    (workspace / "memory" / "link.md").symlink_to(outside)

    absolute = await get(app, fake_openai, path=str(outside))
    parent = await get(app, fake_openai, path="../state/secret.txt")
    symlink = await get(app, fake_openai, path="link.md")

    assert absolute == "error: absolute paths are refused: give a path relative to memory/"
    assert parent == "error: '..' is refused: give a path inside memory/"
    assert symlink == "error: refused: that path leads outside its memory folder"


async def test_a_past_conversation_citation_is_not_a_file(
    app: App, fake_openai: FakeOpenAI
) -> None:
    answer = await get(app, fake_openai, path="sessions/telegram%3A1001#turn-3#L1-L2")

    assert answer.startswith("error: that citation is a past conversation, not a file")


async def test_a_group_reads_its_own_folder_and_nothing_else(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "The owner's private fact.\n")
    write(workspace, f"{OWNER_CHAT_DIR}/MEMORY.md", "The owner's chat fact.\n")
    write(workspace, "chats/telegram%3A-999/MEMORY.md", "Another group's fact.\n")
    write(workspace, f"{GROUP_DIR}/MEMORY.md", "The picnic needs chairs.\n")
    refused = "error: that file is not part of this chat's memory"

    own = await get(app, fake_openai, GROUP, path=f"{GROUP_DIR}/MEMORY.md")
    others = [
        await get(app, fake_openai, GROUP, path=path)
        for path in (
            "MEMORY.md",
            f"{OWNER_CHAT_DIR}/MEMORY.md",
            "chats/telegram%3A-999/MEMORY.md",
            "working/telegram%3A1001.md",
        )
    ]

    assert own == f"{GROUP_DIR}/MEMORY.md lines 1-1 of 1\n1| The picnic needs chairs."
    assert others == [refused] * 4
    assert "private" not in str(others)


async def test_the_owner_reads_global_memory_and_the_own_chat_but_not_a_group(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "The owner's private fact.\n")
    write(workspace, f"{OWNER_CHAT_DIR}/MEMORY.md", "The owner's chat fact.\n")
    write(workspace, f"{GROUP_DIR}/MEMORY.md", "The picnic needs chairs.\n")

    assert (await get(app, fake_openai, path="MEMORY.md")).endswith("1| The owner's private fact.")
    chat = await get(app, fake_openai, path=f"{OWNER_CHAT_DIR}/MEMORY.md")
    group = await get(app, fake_openai, path=f"{GROUP_DIR}/MEMORY.md")

    assert chat.endswith("1| The owner's chat fact.")
    assert group == "error: that file is not part of this chat's memory"


async def test_a_group_symlink_into_the_owners_memory_is_refused(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    secret = write(workspace, "MEMORY.md", "The owner's private fact.\n")
    (write(workspace, f"{GROUP_DIR}/MEMORY.md", "x\n").parent / "peek.md").symlink_to(secret)

    answer = await get(app, fake_openai, GROUP, path=f"{GROUP_DIR}/peek.md")

    assert answer == "error: refused: that path leads outside its memory folder"


async def test_a_binary_file_is_refused(app: App, fake_openai: FakeOpenAI, workspace: Path) -> None:
    write(workspace, "photo.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50)

    assert await get(app, fake_openai, path="photo.md") == "error: refused: that file is not text"


async def test_an_item_citation_reads_the_items_line(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    added = await tool_result(app, fake_openai, "memory_add", {"text": "Mia plays the violin"})
    item_id = added.split()[1]

    answer = await get(app, fake_openai, path=f"items/semantic.jsonl#{item_id}#L1-L1")

    assert answer.startswith("items/semantic.jsonl lines 1-1 of 1\n1| {")
    assert item_id in answer and "Mia plays the violin" in answer


async def test_an_item_cited_by_its_id_alone_is_read_in_the_chats_own_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    """`# Relevant Memory` cites an item by its id: the id says its file, looked for in the
    chat's visible scopes only."""
    added = await tool_result(app, fake_openai, "memory_add", {"text": "Mia plays the violin"})
    item_id = added.split()[1]

    answer = await get(app, fake_openai, path=item_id)
    group = await get(app, fake_openai, GROUP, path=item_id)

    assert answer.startswith("items/semantic.jsonl lines 1-1 of 1\n1| {")
    assert "Mia plays the violin" in answer
    assert group == f"(empty: no item {item_id} in this chat's memory)"


async def test_bad_arguments_are_answered_in_words(app: App, fake_openai: FakeOpenAI) -> None:
    assert await get(app, fake_openai) == "error: `path` is required"
    assert await get(app, fake_openai, path=3) == "error: `path` must be a string"
    assert await get(app, fake_openai, path="a.md", lines="all") == (
        "error: `lines` must be an integer"
    )
    assert (await get(app, fake_openai, path="a.md", line=3)).startswith(
        "error: unknown argument 'line'"
    )
