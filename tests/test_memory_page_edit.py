"""A person's edit of the whole MEMORY.md (the memory page's editor) against what they loaded:
written as sent when nothing changed meanwhile, merged with a change made since (a hand edit,
a fact the bot appended) — and where both changed the same line, both kept and named."""

from __future__ import annotations

from pathlib import Path

from bot.memory.notes.long_term import LongTermMemory
from bot.memory.notes.merge import merge
from bot.models import GLOBAL_SCOPE
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace

LOADED = "# Memory\n- Ann lives in Oslo\n- Tea, no sugar\n"


def memory(tmp_path: Path, text: str | bytes) -> tuple[LongTermMemory, Path]:
    path = tmp_path / "memory" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return LongTermMemory(Workspace(tmp_path), FileLocks(tmp_path / "locks")), path


async def test_an_edit_of_an_unchanged_file_is_written_as_sent(tmp_path: Path) -> None:
    long_term, path = memory(tmp_path, LOADED)
    seen = long_term.snapshot(GLOBAL_SCOPE)

    done = await long_term.replace_merged(GLOBAL_SCOPE, seen, "# Memory\n- Ann lives in Bergen\n")

    assert done.conflicts == ()
    assert path.read_text() == "# Memory\n- Ann lives in Bergen\n"


async def test_a_change_made_meanwhile_elsewhere_in_the_file_is_kept(tmp_path: Path) -> None:
    long_term, path = memory(tmp_path, LOADED)
    seen = long_term.snapshot(GLOBAL_SCOPE)
    path.write_text("# Notes by hand\n" + LOADED)  # an editor, while the page was open

    done = await long_term.replace_merged(
        GLOBAL_SCOPE, seen, LOADED.replace("Tea, no sugar", "Tea with milk")
    )

    assert done.conflicts == ()
    assert path.read_text() == "# Notes by hand\n# Memory\n- Ann lives in Oslo\n- Tea with milk\n"


async def test_the_same_line_changed_on_both_sides_is_kept_twice_and_named(
    tmp_path: Path,
) -> None:
    long_term, path = memory(tmp_path, LOADED.replace("\n", "\r\n"))
    seen = long_term.snapshot(GLOBAL_SCOPE)
    path.write_bytes(
        LOADED.replace("Tea, no sugar", "Coffee, black").replace("\n", "\r\n").encode()
    )

    done = await long_term.replace_merged(
        GLOBAL_SCOPE, seen, LOADED.replace("Tea, no sugar", "Tea with milk")
    )

    assert done.conflicts == (("- Coffee, black\n", "- Tea with milk\n"),)
    assert path.read_bytes() == (
        b"# Memory\r\n- Ann lives in Oslo\r\n- Coffee, black\r\n- Tea with milk\r\n"
    )


def test_a_line_added_on_both_sides_is_kept_once() -> None:
    done = merge(LOADED, LOADED + "- Bo plays chess\n", LOADED + "- Bo plays chess\n")

    assert done.text == LOADED + "- Bo plays chess\n"
    assert done.conflicts == ()
