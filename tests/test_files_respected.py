"""Files a person owns are respected: a symlinked MEMORY.md has its target written (the link
stays), CRLF endings are kept, a file that is not UTF-8 is left byte for byte with a clear
answer, a person's appends made while the bot appends are all kept, and a NUL in one line of a
note hides nothing else (and a reply's NUL never reaches a note)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.talk import prompt_of_turn, say


def memory_md(workspace: Path) -> Path:
    path = workspace / "memory" / "MEMORY.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


async def test_a_symlinked_memory_file_has_its_target_written_and_stays_a_link(
    app: App, workspace: Path, tmp_path: Path
) -> None:
    synced = tmp_path / "Sync" / "MEMORY.md"
    synced.parent.mkdir()
    synced.write_text("# Mine\n- kept in my synced folder\n")
    memory_md(workspace).symlink_to(synced)

    [answer] = await say(app, "/remember The boat is called Wren")

    assert answer == "Saved to memory: The boat is called Wren"
    assert memory_md(workspace).is_symlink()
    text = synced.read_text()
    assert text.startswith("# Mine\n- kept in my synced folder\n")
    assert "- The boat is called Wren" in text


async def test_crlf_endings_are_kept_by_an_append_and_by_a_rewrite(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    memory_md(workspace).write_bytes(b"# Memory\r\n- Ann lives in Porto\r\n")

    await say(app, "/remember Ann likes figs")
    fake_openai.script(Reply("Done. <memory>Ann's cat is Miso</memory>"))
    await say(app, "The cat? Miso.")
    await say(app, "/forget Porto")

    data = memory_md(workspace).read_bytes()
    assert b"Ann likes figs\r\n" in data and b"Ann's cat is Miso\r\n" in data
    assert b"Porto" not in data
    assert data.count(b"\n") == data.count(b"\r\n")


async def test_a_latin1_memory_file_is_left_byte_for_byte_with_a_clear_answer(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    original = "# Mémoire\n- café à Porto\n".encode("latin-1")
    memory_md(workspace).write_bytes(original)
    fake_openai.script(Reply("<memory>Ann likes figs</memory>"))

    [answer] = await say(app, "/remember Ann likes figs")
    [tag_only] = await say(app, "Figs, remember?")

    assert "not UTF-8 text" in answer and "Save it as UTF-8" in answer
    assert tag_only == "Sorry, I couldn't save that to memory."
    assert memory_md(workspace).read_bytes() == original


async def test_lines_a_person_appends_while_the_bot_appends_are_all_kept(
    app: App, workspace: Path
) -> None:
    memory_md(workspace).write_text("## Remembered\n- first\n")
    stop = threading.Event()
    written: list[str] = []

    def person() -> None:
        n = 0
        while not stop.is_set():
            line = f"- my own line {n}\n"
            with memory_md(workspace).open("a") as handle:
                handle.write(line)
            written.append(line)
            n += 1
            time.sleep(0.002)

    typing = threading.Thread(target=person)
    typing.start()
    try:
        for n in range(60):
            await say(app, f"/remember bot fact {n}")
            await asyncio.sleep(0)
    finally:
        stop.set()
        typing.join()

    lines = memory_md(workspace).read_text().splitlines(keepends=True)
    assert len(written) > 60
    assert [line for line in written if line not in lines] == []
    assert all(f"- bot fact {n}\n" in lines for n in range(60))


async def test_a_nul_in_one_line_of_a_note_hides_nothing_else(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("a\x00b noted"))
    await say(app, "first \x00 thing")
    note = workspace / "memory" / f"{app.now().date()}.md"
    assert b"\x00" not in note.read_bytes()
    with note.open("ab") as handle:
        handle.write(b"[09:00] User: a stray \x00 byte | Assistant: ok\n")
        handle.write(b"[09:01] User: the parcel comes Tuesday | Assistant: noted\n")

    prompt = await prompt_of_turn(app, fake_openai)

    assert "the parcel comes Tuesday" in prompt and "first  thing" not in prompt
    assert "first thing" in prompt and "a stray  byte" in prompt
