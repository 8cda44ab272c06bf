"""Memory a person steers: MEMORY.md is the truth its items follow, and a correction supersedes
the fact it corrects (kept as history, searchable, never shown as current)."""

from __future__ import annotations

import json
from pathlib import Path

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import OWNER
from tests.talk import memory_section, prompt_of_turn, say, tool_result

MEMORY = Path("memory/MEMORY.md")
SEMANTIC = Path("memory/items/semantic.jsonl")


def items(workspace: Path) -> list[dict[str, object]]:
    path = workspace / SEMANTIC
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def status_of(workspace: Path, text: str) -> str:
    [found] = [item for item in items(workspace) if item["text"] == text]
    return str(found["status"])


# ----------------------------------------------------------------------------- files stay the truth


async def test_a_line_deleted_by_hand_is_gone_from_the_next_prompt_and_from_search(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted. <memory>The wifi password is heron42</memory>"))
    await say(app, "wifi: heron42, keep it")
    assert status_of(workspace, "The wifi password is heron42") == "active"

    (workspace / MEMORY).write_text("## Remembered\n- Ann prefers tea\n")  # deleted by hand

    prompt = await prompt_of_turn(app, fake_openai)
    assert "The wifi password is heron42" not in prompt
    assert "Ann prefers tea" in memory_section(prompt)
    found = await tool_result(app, fake_openai, "memory_search", {"query": "wifi password"})
    assert "The wifi password is heron42" not in found
    assert status_of(workspace, "The wifi password is heron42") == "retired"


async def test_a_line_changed_by_hand_retexts_its_item(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted. <memory>The gate code is 1234</memory>"))
    await say(app, "gate: 1234")
    text = (workspace / MEMORY).read_text()
    (workspace / MEMORY).write_text(text.replace("1234", "9876"))

    prompt = await prompt_of_turn(app, fake_openai)
    found = await tool_result(app, fake_openai, "memory_search", {"query": "gate code"})

    assert "The gate code is 1234" not in prompt and "The gate code is 1234" not in found
    assert "The gate code is 9876" in found
    assert [i["text"] for i in items(workspace)] == ["The gate code is 9876"]


async def test_a_line_put_back_by_hand_brings_its_item_back(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted. <memory>Tom plays chess</memory>"))
    await say(app, "Tom? chess, a lot")
    text = (workspace / MEMORY).read_text()
    (workspace / MEMORY).write_text("")
    await prompt_of_turn(app, fake_openai)
    assert status_of(workspace, "Tom plays chess") == "retired"

    (workspace / MEMORY).write_text(text)
    await prompt_of_turn(app, fake_openai)

    assert status_of(workspace, "Tom plays chess") == "active"


def consolidated(update: str, **fields: list[str]) -> Reply:
    return Reply(json.dumps({"history_entry": "[x] Talk.", "memory_update": update, **fields}))


async def test_a_line_consolidation_removes_retires_its_item(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted. <memory>Rex is a puppy</memory>"))
    await say(app, "Rex: puppy")
    fake_openai.script(consolidated("## Remembered\n", removed=["- Rex is a puppy"]))
    await say(app, "/new")

    prompt = await prompt_of_turn(app, fake_openai)

    assert "Rex is a puppy" not in prompt
    assert status_of(workspace, "Rex is a puppy") == "retired"


async def test_a_line_the_model_says_is_replaced_is_kept_as_history(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted. <memory>Rex is a beagle</memory>"))
    await say(app, "Rex: beagle")
    update = "## Remembered\n- Rex is a beagle mix\n"
    fake_openai.script(consolidated(update, replaced=["- Rex is a beagle"]))
    await say(app, "/new")

    prompt = await prompt_of_turn(app, fake_openai)

    day = app.now().date().isoformat()
    assert (workspace / MEMORY).read_text() == (
        f"## Remembered\n- Rex is a beagle mix\n- Rex is a beagle _(was, until {day})_\n"
    )
    assert "Rex is a beagle mix" in memory_section(prompt)
    assert "- Rex is a beagle\n" not in memory_section(prompt)
    assert status_of(workspace, "Rex is a beagle") == "superseded"
    assert status_of(workspace, "Rex is a beagle mix") == "active"


async def test_consolidation_marks_a_move_by_the_rule_even_when_the_model_drops_it(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    (workspace / MEMORY).parent.mkdir(parents=True, exist_ok=True)
    (workspace / MEMORY).write_text("# Ann\n- Ann lives in Oslo\n- Ann has a cat\n")
    fake_openai.script(Reply("ok"))
    await say(app, "Ann moved to Bergen")
    update = "# Ann\n- Ann lives in Bergen\n"  # Oslo named as removed: still history
    fake_openai.script(consolidated(update, removed=["- Ann lives in Oslo"]))
    await say(app, "/new")

    day = app.now().date().isoformat()
    assert (workspace / MEMORY).read_text() == (
        f"# Ann\n- Ann lives in Bergen\n- Ann lives in Oslo _(was, until {day})_\n- Ann has a cat\n"
    )


# ----------------------------------------------------------------------------- corrections


async def test_a_correction_leaves_one_current_fact_and_the_old_one_searchable(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(
        Reply("Noted. <memory>Ann lives in Lyon</memory>"),
        Reply("Noted. <memory>Ann lives in Bergen</memory>"),
    )
    await say(app, "Ann: Lyon")
    await say(app, "Ann moved to Bergen")

    day = app.now().date().isoformat()
    assert (workspace / MEMORY).read_text() == (
        f"## Remembered\n- Ann lives in Lyon _(was, until {day})_\n- Ann lives in Bergen\n"
    )
    prompt = await prompt_of_turn(app, fake_openai)
    assert "Ann lives in Bergen" in memory_section(prompt)
    assert "Lyon" not in memory_section(prompt)
    assert status_of(workspace, "Ann lives in Lyon") == "superseded"
    assert status_of(workspace, "Ann lives in Bergen") == "active"
    found = await tool_result(app, fake_openai, "memory_search", {"query": "Ann Lyon"})
    assert f"Ann lives in Lyon _(was, until {day})_" in found


async def test_remember_supersedes_by_the_rule_and_leaves_other_facts(
    app: App, workspace: Path
) -> None:
    await say(app, "/remember I work at Acme")
    await say(app, "/remember I like green tea")
    await say(app, "/remember I work at Globex")

    lines = (workspace / MEMORY).read_text().splitlines()
    assert lines[1].startswith("- I work at Acme _(was, until ")
    assert lines[2:] == ["- I like green tea", "- I work at Globex"]


# ----------------------------------------------------------------------------- provenance


async def test_memory_search_and_memory_show_who_said_a_fact(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted. <memory>Ann's dentist is Dr Lee</memory>"))
    await say(app, "dentist: Dr Lee")
    day = app.now().date().isoformat()
    said = f"user ({OWNER}), said, telegram:{OWNER}, {day}"

    found = await tool_result(app, fake_openai, "memory_search", {"query": "Ann dentist"})
    [shown] = await say(app, "/memory")

    assert f"Ann's dentist is Dr Lee\n(from: {said})" in found
    assert f"- Ann's dentist is Dr Lee  ({said})" in shown
    [item] = items(workspace)
    assert item["provenance"] == {
        "by": f"user ({OWNER})",
        "chat": f"telegram:{OWNER}",
        "at": item["provenance"]["at"],  # type: ignore[index]
        "via": "message",
    }


async def test_a_line_written_by_hand_reads_as_such_and_a_forget_receipt_names_who_said_it(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    (workspace / MEMORY).parent.mkdir(parents=True, exist_ok=True)
    (workspace / MEMORY).write_text("- Tom likes kites\n")  # an old file: no provenance
    await say(app, "/remember The boiler code is 5521")

    [shown] = await say(app, "/memory")
    [receipt] = await say(app, "/forget boiler code")

    assert "- Tom likes kites\n" in shown + "\n"  # no provenance: the line alone
    said = f"user ({OWNER}), said, telegram:{OWNER}, {app.now().date().isoformat()}"
    assert f"- The boiler code is 5521  ({said})" in shown
    assert f"MEMORY.md: - The boiler code is 5521 — {said}" in receipt


async def test_moving_back_makes_the_old_value_current_again(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(
        Reply("Noted. <memory>Ann lives in Lyon</memory>"),
        Reply("Noted. <memory>Ann lives in Bergen</memory>"),
        Reply("Noted. <memory>Ann lives in Lyon</memory>"),
    )
    for text in ("Ann: Lyon", "Ann: Bergen", "Ann: back to Lyon"):
        await say(app, text)

    day = app.now().date().isoformat()
    assert (workspace / MEMORY).read_text() == (
        f"## Remembered\n- Ann lives in Lyon _(was, until {day})_\n"
        f"- Ann lives in Bergen _(was, until {day})_\n- Ann lives in Lyon\n"
    )
    prompt = await prompt_of_turn(app, fake_openai)
    assert "Bergen" not in memory_section(prompt)
    assert status_of(workspace, "Ann lives in Lyon") == "active"
    assert status_of(workspace, "Ann lives in Bergen") == "superseded"


async def test_memory_edit_can_say_a_new_value_supersedes_the_old_one(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    await say(app, "/remember Rex is a puppy")
    args = {"old": "Rex is a puppy", "new": "Rex is a grown dog", "supersedes": True}

    answer = await tool_result(app, fake_openai, "memory_edit", args)

    day = app.now().date().isoformat()
    assert answer == "changed in MEMORY.md: - Rex is a puppy → - Rex is a grown dog"
    assert (workspace / MEMORY).read_text() == (
        f"## Remembered\n- Rex is a puppy _(was, until {day})_\n- Rex is a grown dog\n"
    )
    assert status_of(workspace, "Rex is a puppy") == "superseded"
    [new] = [i for i in items(workspace) if i["text"] == "Rex is a grown dog"]
    assert new["status"] == "active" and new["provenance"]["via"] == "inference"  # type: ignore[index]
