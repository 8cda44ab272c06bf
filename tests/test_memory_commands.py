"""/memory, /remember and /forget through the real turn runner: what they show and change."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.app import App
from bot.memory.notes.working import age_phrase
from tests.fakes.openai_api import FakeOpenAI, Hang, Reply
from tests.harness import FRIEND, OWNER
from tests.talk import GROUP, GROUP_DIR, OWNER_CHAT_DIR, prompt_of_turn, say, write

UNDO = "/undo within 10 minutes puts it back; after that it is gone."


def files(workspace: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in (workspace / "memory").rglob("*.md") if p.is_file()}


# ----------------------------------------------------------------------------- /memory


async def test_memory_in_the_owners_chat_describes_the_global_memory(
    app: App, workspace: Path
) -> None:
    today = app.now().date()
    write(workspace, "MEMORY.md", "".join(f"- fact {i}\n" for i in range(20)))  # 190 bytes
    write(workspace, f"{OWNER_CHAT_DIR}/MEMORY.md", "- this chat plans trips\n")
    write(workspace, f"{today}.md", "[08:00] User: a | Assistant: b\n")  # 31 bytes
    write(workspace, f"{today - timedelta(days=3)}.md", "[08:00] User: c | Assistant: d\n")
    write(workspace, "HISTORY.md", "## 2026-11-20T14:05:00+00:00\nWe planned Lisbon.\n\n")
    working = write(workspace, f"working/telegram%3A{OWNER}.md", "- Topic: Lisbon\n")
    os.utime(working, (time.time() - 3 * 3600 - 60,) * 2)
    updated = datetime.fromtimestamp(working.stat().st_mtime, tz=UTC)

    [report] = await say(app, "/memory")

    assert report.splitlines() == [
        "Memory: global (your private memory)",
        "MEMORY.md: 190 bytes, 20 lines",
        "Chat memory: 24 bytes, 1 line",
        "Daily notes: 2 files; today's: 31 bytes",
        "HISTORY.md: 49 bytes; last consolidation 2026-11-20 14:05",
        f"Working memory: {age_phrase(updated, app.now())}",
        "Prompt: all of it fits (budget 3,500 tokens)",
        "",
        "MEMORY.md, first 15 lines:",
        *(f"- fact {i}" for i in range(15)),
        "… and 5 more lines",
    ]


async def test_memory_in_a_group_describes_only_the_groups_memory(
    app: App, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "- OWNER-SECRET\n")
    write(workspace, "HISTORY.md", "## 2026-11-20T14:05:00+00:00\nOWNER-HISTORY\n\n")
    write(workspace, f"{GROUP_DIR}/MEMORY.md", "- the group meets on Fridays\n")

    [report] = await say(app, "/memory", chat=GROUP)

    assert "OWNER-" not in report
    assert report.splitlines()[:6] == [
        "Memory: this chat's own",
        "MEMORY.md: 29 bytes, 1 line",
        "Daily notes: 0 files; today's: none",
        "HISTORY.md: none; no consolidation yet",
        "Working memory: none",
        "Prompt: all of it fits (budget 3,500 tokens)",
    ]
    assert report.endswith("MEMORY.md, first 1 line:\n- the group meets on Fridays")


async def test_memory_with_nothing_stored(app: App) -> None:
    [report] = await say(app, "/memory", user=FRIEND)

    assert report.startswith("Memory: this chat's own\nMEMORY.md: none\n")
    assert report.endswith("MEMORY.md is empty.")


# ----------------------------------------------------------------------------- /remember


async def test_remember_saves_the_fact_once_and_the_next_prompt_has_it(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "# Ann\n- likes tea\n")

    assert await say(app, "/remember Ann's  birthday is 3 May") == [
        "Saved to memory: Ann's birthday is 3 May"
    ]
    assert await say(app, "/remember ann's birthday IS 3 may") == ["I already had that."]

    text = (workspace / "memory" / "MEMORY.md").read_text()
    assert text == "# Ann\n- likes tea\n\n## Remembered\n- Ann's birthday is 3 May\n"
    assert "- Ann's birthday is 3 May" in await prompt_of_turn(app, fake_openai)


async def test_remember_without_text_shows_the_usage(app: App, workspace: Path) -> None:
    assert await say(app, "/remember") == [
        "Usage: /remember <text> — I save it to this chat's memory."
    ]
    assert files(workspace) == {}


async def test_remember_in_a_group_writes_only_the_groups_memory(app: App, workspace: Path) -> None:
    write(workspace, "MEMORY.md", "- owner stuff\n")
    before = (workspace / "memory" / "MEMORY.md").read_bytes()

    assert await say(app, "/remember we meet on Fridays", chat=GROUP) == [
        "Saved to memory: we meet on Fridays"
    ]

    assert (workspace / "memory" / "MEMORY.md").read_bytes() == before
    group = (workspace / "memory" / GROUP_DIR / "MEMORY.md").read_text()
    assert group == "## Remembered\n- we meet on Fridays\n"


# ----------------------------------------------------------------------------- /forget


async def test_forget_removes_matching_lines_everywhere_and_lists_them(
    app: App, workspace: Path
) -> None:
    today = app.now().date()
    write(workspace, "MEMORY.md", "# Ann\n- Ann likes green TEA\n- Ann hates coffee\n")
    write(workspace, f"{OWNER_CHAT_DIR}/MEMORY.md", "- tea time is at five\n- trips\n")
    write(
        workspace,
        f"{today}.md",
        "[08:00] User: tea? | Assistant: yes\n[09:00] User: hi | Assistant: hi\n",
    )
    write(workspace, "archive/2026-01-01.md", "[10:00] User: more tea | Assistant: ok\n")
    write(
        workspace, "HISTORY.md", "## 2026-11-20T14:05:00+00:00\nTalked about tea.\nAnd Lisbon.\n\n"
    )
    write(workspace, "HISTORY-2026-11.md", "## 2026-11-20T14:05:00+00:00\nTalked about tea.\n\n")

    [receipt] = await say(app, "/forget tea")

    assert receipt.splitlines() == [
        "Forgot 6 lines containing “tea” "
        "(MEMORY.md 1, chat memory 1, daily notes 1, archived notes 1, history 2):",
        "MEMORY.md: - Ann likes green TEA",
        f"{today}.md: [08:00] User: tea? | Assistant: yes",
        "archive/2026-01-01.md: [10:00] User: more tea | Assistant: ok",
        "HISTORY-2026-11.md: Talked about tea.",
        "HISTORY.md: Talked about tea.",
        f"{OWNER_CHAT_DIR}/MEMORY.md: - tea time is at five",
        UNDO,
    ]
    memory = workspace / "memory"
    assert (memory / "MEMORY.md").read_text() == "# Ann\n- Ann hates coffee\n"
    assert (memory / OWNER_CHAT_DIR / "MEMORY.md").read_text() == "- trips\n"
    assert (memory / f"{today}.md").read_text() == "[09:00] User: hi | Assistant: hi\n"
    assert (memory / "archive" / "2026-01-01.md").read_text() == ""
    assert (memory / "HISTORY.md").read_text() == "## 2026-11-20T14:05:00+00:00\nAnd Lisbon.\n\n"


async def test_forget_reaches_the_chats_working_memory_too(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, f"working/telegram%3A{GROUP}.md", "- Topic: the tea party\n- Pending: cake\n")

    [receipt] = await say(app, "/forget tea party", chat=GROUP)
    prompt = await prompt_of_turn(app, fake_openai, chat=GROUP)

    assert receipt.splitlines()[1:] == [
        f"working/telegram%3A{GROUP}.md: - Topic: the tea party",
        UNDO,
    ]
    assert "tea party" not in prompt and "- Pending: cake" in prompt


async def test_forget_waits_for_the_chats_running_turn_so_its_note_is_kept(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    note = write(workspace, f"{app.now().date()}.md", "[08:00] User: tea? | Assistant: yes\n")
    fake_openai.script(Hang(then=Reply("done")))
    turn = asyncio.create_task(say(app, "hello"))
    await fake_openai.wait_until_hanging()

    forget = asyncio.create_task(say(app, "/forget tea?"))
    await asyncio.sleep(0.1)
    waited = not forget.done()
    fake_openai.release()

    assert await turn == ["done"]
    assert (await forget)[0].startswith("Forgot 1 line containing “tea?” (daily notes 1):")
    assert waited
    assert note.read_text().endswith("User: hello | Assistant: done\n")
    assert "tea?" not in note.read_text()


async def test_forget_keeps_every_other_byte_of_a_hand_edited_file(
    app: App, workspace: Path
) -> None:
    note = write(
        workspace,
        f"{app.now().date()}.md",
        b"caf\xe9 written in latin-1\r\n[08:00] User: secret plan | Assistant: ok\n\tindented  \n",
    )

    [receipt] = await say(app, "/forget SECRET")

    assert receipt.startswith("Forgot 1 line containing “SECRET” (daily notes 1):")
    assert note.read_bytes() == b"caf\xe9 written in latin-1\r\n\tindented  \n"


async def test_forget_in_a_group_touches_only_the_groups_memory(app: App, workspace: Path) -> None:
    write(workspace, "MEMORY.md", "- the owner likes tea\n")
    write(workspace, f"{app.now().date()}.md", "[08:00] User: tea | Assistant: ok\n")
    write(workspace, f"{GROUP_DIR}/MEMORY.md", "- the group likes tea\n- and cake\n")
    owners = {p: b for p, b in files(workspace).items() if GROUP_DIR not in str(p)}

    [receipt] = await say(app, "/forget tea", user=OWNER, chat=GROUP)

    assert receipt.splitlines() == [
        "Forgot 1 line containing “tea” (MEMORY.md 1):",
        "MEMORY.md: - the group likes tea",
        UNDO,
    ]
    assert {p: b for p, b in files(workspace).items() if GROUP_DIR not in str(p)} == owners
    assert (workspace / "memory" / GROUP_DIR / "MEMORY.md").read_text() == "- and cake\n"


async def test_forget_refuses_a_needle_shorter_than_three_characters(
    app: App, workspace: Path
) -> None:
    write(workspace, "MEMORY.md", "- a\n- ab\n")
    before = files(workspace)

    for text in ("/forget", "/forget ab", "/forget  a "):
        [reply] = await say(app, text)
        assert reply.startswith("Usage: /forget <text> (3 characters or more)")

    assert files(workspace) == before


async def test_forget_says_when_nothing_matches(app: App, workspace: Path) -> None:
    write(workspace, "MEMORY.md", "- Ann likes tea\n")
    before = files(workspace)

    assert await say(app, "/forget coffee") == ["Nothing in this chat's memory contains “coffee”."]
    assert files(workspace) == before


async def test_a_long_receipt_is_capped(app: App, workspace: Path) -> None:
    write(workspace, "MEMORY.md", "".join(f"- tea fact {i}\n" for i in range(45)) + "- keep\n")

    [receipt] = await say(app, "/forget tea fact")

    lines = receipt.splitlines()
    assert lines[0] == "Forgot 45 lines containing “tea fact” (MEMORY.md 45):"
    assert lines[1:31] == [f"MEMORY.md: - tea fact {i}" for i in range(30)]
    assert lines[31:] == ["… and 15 more", UNDO]
    assert (workspace / "memory" / "MEMORY.md").read_text() == "- keep\n"


async def test_help_lists_the_memory_commands(app: App) -> None:
    [text] = await say(app, "/help")

    for name in ("memory", "remember", "forget"):
        assert f"/{name} — " in text
