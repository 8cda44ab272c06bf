"""Files a person owns are respected: a symlinked MEMORY.md is written through and stays a link,
CRLF line endings stay, a file that is not UTF-8 is refused (saying what to do) and loses
nothing, and a line a person appends while the bot appends facts is never lost."""

from __future__ import annotations

import asyncio
import stat
import threading
from pathlib import Path

from structlog.testing import capture_logs

from bot.app import App
from bot.memory.notes.long_term import LongTermMemory
from bot.models import GLOBAL_SCOPE
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.talk import memory_section, new_conversation, prompt_of_turn, say, tool_result, write
from tests.test_consolidation import ENTRY, answer, consolidating, settle, talk

MEMORY = "# Me\n- Lives in Porto\n- Likes green tea\n"
LATIN_1 = "# Me\n- Lives in München\n- Likes green tea\n".encode("latin-1")
UPDATED = "# Me\n- Lives in Porto\n- Likes green tea\n- Plans a trip to Lisbon\n"


def crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode()


def synced_memory(workspace: Path, tmp_path: Path, text: str) -> tuple[Path, Path]:
    """MEMORY.md as a link into a synced folder outside the workspace: (link, target)."""
    target = tmp_path / "Sync" / "MEMORY.md"
    target.parent.mkdir()
    target.write_text(text)
    target.chmod(0o644)
    link = workspace / "memory" / "MEMORY.md"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link, target


# ----------------------------------------------------------------------------- symlinks


async def test_a_symlinked_memory_is_written_through_and_stays_a_link(
    app: App, fake_openai: FakeOpenAI, workspace: Path, tmp_path: Path
) -> None:
    link, target = synced_memory(workspace, tmp_path, MEMORY)

    assert await say(app, "/remember Ann has a cat") == ["Saved to memory: Ann has a cat"]
    edited = await tool_result(app, fake_openai, "memory_edit", {"old": "porto", "new": "Lisbon"})
    forgotten = await say(app, "/forget green tea")

    assert edited == "changed in MEMORY.md: - Lives in Porto → - Lisbon"
    assert "MEMORY.md: - Likes green tea" in forgotten[0]
    assert link.is_symlink() and link.readlink() == target
    assert target.read_text() == "# Me\n- Lisbon\n\n## Remembered\n- Ann has a cat\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # the person's permissions
    assert [p.name for p in target.parent.iterdir()] == ["MEMORY.md"]  # no temp left behind
    assert "- Lisbon" in await prompt_of_turn(app, fake_openai)


async def test_consolidation_rewrites_a_symlinked_memory_through_the_link(
    workspace: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    link, target = synced_memory(workspace, tmp_path, MEMORY)
    async with consolidating(workspace, fake_openai) as app:
        await talk(app, fake_openai, 1, 4, answer(ENTRY, UPDATED))
        await settle(app)

    assert link.is_symlink() and target.read_text() == UPDATED


# ----------------------------------------------------------------------------- line endings


async def test_crlf_line_endings_stay_through_every_change(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    memory = write(workspace, "MEMORY.md", crlf(MEMORY + "- Likes black tea\n"))

    await say(app, "/remember Ann has a cat")
    await tool_result(app, fake_openai, "memory_edit", {"old": "porto", "new": "Lives in Lisbon"})
    await say(app, "/forget black tea")

    expected = "# Me\n- Lives in Lisbon\n- Likes green tea\n\n## Remembered\n- Ann has a cat\n"
    assert memory.read_bytes() == crlf(expected)
    assert await say(app, "/undo")
    assert memory.read_bytes() == crlf(expected.replace("tea\n\n", "tea\n- Likes black tea\n\n"))


async def test_consolidation_keeps_crlf(workspace: Path, fake_openai: FakeOpenAI) -> None:
    memory = write(workspace, "MEMORY.md", crlf(MEMORY))
    async with consolidating(workspace, fake_openai) as app:
        await talk(app, fake_openai, 1, 4, answer(ENTRY, UPDATED))
        await settle(app)

    assert memory.read_bytes() == crlf(UPDATED)


# ----------------------------------------------------------------------------- encodings


async def test_a_latin_1_memory_is_refused_with_what_to_do_and_loses_nothing(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    memory = write(workspace, "MEMORY.md", LATIN_1)

    remembered = await say(app, "/remember Ann has a cat")
    edited = await tool_result(app, fake_openai, "memory_edit", {"old": "porto", "new": "x"})
    prompt = await prompt_of_turn(app, fake_openai)

    refusal = "MEMORY.md is not UTF-8 text, so I left it alone; save it as UTF-8 to let me edit it."
    assert remembered == [refusal]
    assert edited == f"error: {refusal}"
    assert memory.read_bytes() == LATIN_1
    assert "- Lives in M\ufffdnchen" in memory_section(prompt)  # read with a stray byte replaced


async def test_forgetting_in_a_latin_1_memory_keeps_every_other_byte(
    app: App, workspace: Path
) -> None:
    memory = write(workspace, "MEMORY.md", LATIN_1)

    await say(app, "/forget green tea")

    assert memory.read_bytes() == "# Me\n- Lives in München\n".encode("latin-1")


async def test_consolidation_leaves_a_latin_1_memory_as_it_is(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    memory = write(workspace, "MEMORY.md", LATIN_1)
    async with consolidating(workspace, fake_openai) as app:
        await talk(app, fake_openai, 1, 4, answer(ENTRY, UPDATED))
        await settle(app)

    assert memory.read_bytes() == LATIN_1
    assert ENTRY in (workspace / "memory" / "HISTORY.md").read_text()


# ----------------------------------------------------------------------------- appends


async def test_lines_a_person_appends_while_the_bot_appends_facts_are_all_kept(
    tmp_path: Path,
) -> None:
    workspace = Workspace(tmp_path)
    memory = LongTermMemory(workspace, FileLocks(workspace.locks_dir))
    path = workspace.long_term_path(GLOBAL_SCOPE)
    write(tmp_path, "MEMORY.md", "# Me\n")
    human = [f"a line typed by hand, number {n}" for n in range(400)]
    facts = [f"fact number {n} from a tag" for n in range(250)]

    def type_lines() -> None:
        for line in human:
            with path.open("a") as handle:
                handle.write(line + "\n")

    typist = threading.Thread(target=type_lines)
    typist.start()
    for fact in facts:
        appended = await memory.append_facts(GLOBAL_SCOPE, [fact], section="Remembered")
        assert appended.added == [fact]
    await asyncio.to_thread(typist.join)

    lines = path.read_text().splitlines()
    assert [line for line in lines if line.startswith("a line")] == human
    assert [line for line in lines if line.startswith("- fact")] == [f"- {f}" for f in facts]


# ----------------------------------------------------------------------------- odd characters


async def test_a_nul_in_one_line_hides_nothing_else_of_todays_notes(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    raw = (
        b"[08:00] User: good morning | Assistant: morning\n"
        b"[08:05] User: paste | Assistant: here\x00\x00it is\x1b[0m\n"
        b"[08:10] User: thanks | Assistant: welcome\n"
    )
    note = write(workspace, f"{app.now().date()}.md", raw)

    with capture_logs() as logs:
        section = memory_section(await prompt_of_turn(app, fake_openai))
    got = await tool_result(app, fake_openai, "memory_get", {"path": note.name})

    assert "## Today's Notes\n[08:00] User: good morning | Assistant: morning\n" in section
    assert "[08:05] User: paste | Assistant: hereit is[0m\n[08:10] User: thanks" in section
    [warning] = [e for e in logs if e["event"] == "memory_file_control_characters"]
    assert warning["lines"] == 1 and warning["path"] == str(note)
    assert "2| [08:05] User: paste | Assistant: hereit is[0m" in got
    assert note.read_bytes().startswith(raw)  # read, never rewritten


async def test_a_reply_with_a_nul_writes_none_into_the_note(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("bin\x00ary\x07 answer"))
    await say(app, "show me\x00 the bytes")

    note = (workspace / "memory" / f"{app.now().date()}.md").read_text()
    assert note.endswith("User: show me the bytes | Assistant: binary answer\n")
    episodic = "".join(p.read_text() for p in (workspace / "memory" / "items").rglob("*.jsonl"))
    assert "show me the bytes" in episodic and "\\u0000" not in episodic  # nor in an item
    new_conversation(workspace)  # memory alone holds it
    assert "User: show me the bytes" in memory_section(await prompt_of_turn(app, fake_openai))


async def test_undo_after_a_hand_edit_puts_the_line_back_with_the_files_crlf(
    app: App, workspace: Path
) -> None:
    memory = write(workspace, "MEMORY.md", crlf(MEMORY))
    await say(app, "/forget green tea")
    memory.write_bytes(crlf("# About me\n- Lives in Porto\n- Likes cats"))  # no newline at the end

    await say(app, "/undo")

    expected = "# About me\n- Lives in Porto\n- Likes cats\n# Me\n- Likes green tea\n"
    assert memory.read_bytes() == crlf(expected)


async def test_forget_removes_a_whole_line_even_with_a_line_separator_inside(
    app: App, workspace: Path
) -> None:
    memory = write(workspace, "MEMORY.md", "# Me\n- a note\u2028with a secret inside\n- kept\n")

    await say(app, "/forget secret")

    assert memory.read_text() == "# Me\n- kept\n"
