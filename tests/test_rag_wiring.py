"""Recall wired into the running bot: system 55 indexes every turn, system 20 finds it again
under `# Relevant Memory`, items are written per turn and packed, tags and consolidation make
semantic items, decay runs, and a deleted index is rebuilt at start."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.app import App
from bot.index import Hit
from bot.memory.recall.relevant import notes_line
from bot.memory.upkeep.consolidation import Consolidator
from bot.settings import ItemSettings, MemorySettings, RagSettings
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import SMALL_MODEL2VEC, make_settings, started_app
from tests.talk import (
    GROUP,
    GROUP_DIR,
    memory_section,
    new_conversation,
    relevant_hits,
    relevant_section,
    say,
    system_text,
    write,
)

CONSOLIDATED = '{"history_entry": "[2026-11-24 09:00] Where the key is.", "memory_update": null}'
MODEL2VEC = SMALL_MODEL2VEC


async def prompt_after(app: App, fake: FakeOpenAI, text: str, **where: Any) -> str:
    """Say `text` (answered "ok"); the system prompt the model got for it."""
    fake.script(Reply("ok"))
    assert await say(app, text, **where) == ["ok"]
    return str(system_text(fake.requests[-1]))


async def search(app: App, query: str, scopes: list[str], k: int = 10) -> list[Hit]:
    """The index's hits once the syncs asked for so far have run (the turns sync after them)."""
    assert app.items_index is not None
    await app.items_index.index.settle()
    return app.items_index.index.search(query, scopes=scopes, k=k)


async def citations(app: App, query: str) -> list[str]:
    """The owner's hits but exchanges (a rebuilt index has the same files, not the same turns)."""
    return [h.citation for h in await search(app, query, [""]) if h.kind != "exchange"]


def items(workspace: Path, layer: str, folder: str = "") -> list[dict[str, Any]]:
    root = workspace / "memory" / folder / "items"
    paths = sorted((root / "episodic").glob("*.jsonl")) if layer == "episodic" else []
    paths = paths or [root / f"{layer}.jsonl"]
    lines = [line for p in paths if p.exists() for line in p.read_text().splitlines()]
    return [json.loads(line) for line in lines if line.strip()]


# ----------------------------------------------------------------------------- exchanges


async def test_an_exchange_is_indexed_and_found_in_the_next_turns_relevant_memory(
    app: App, fake_openai: FakeOpenAI
) -> None:
    long = "Some background first. " * 12 + "The spare key is under the blue ceramic frog."
    fake_openai.script(Reply("Got it."), Reply(CONSOLIDATED))
    await say(app, long)
    await say(app, "/new")  # out of the conversation the prompt carries: only recall has it

    prompt = await prompt_after(app, fake_openai, "where is the spare key, the ceramic frog?")

    assert "ceramic frog" not in memory_section(prompt)  # the note line is cut at 200 chars
    relevant = relevant_section(prompt).splitlines()
    [at] = [n for n, line in enumerate(relevant) if "blue ceramic frog" in line]
    assert relevant[at].startswith("- User: Some background first.")  # no citation: not a file
    assert relevant[at].endswith("Assistant: Got it.")
    assert relevant[:at][-1] == f"## {app.now():%Y-%m-%d}"  # under its day


async def test_the_exchange_the_conversation_carries_is_in_no_memory_section(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Pixel is a fine name."))
    await say(app, "my cat is called Pixel")

    prompt = await prompt_after(app, fake_openai, "what is my cat called? Pixel?")
    assert "Pixel is a fine name" not in prompt  # neither today's note nor a hit nor an item
    assert "Pixel is a fine name." in [m["content"] for m in fake_openai.requests[-1]["messages"]]

    new_conversation(workspace)
    prompt = await prompt_after(app, fake_openai, "what is my cat called? Pixel?")
    assert "User: my cat is called Pixel | Assistant: Pixel is a fine name." in prompt
    assert prompt.count("Pixel is a fine name") == 1  # not again under Relevant Memory


# ----------------------------------------------------------------------------- delta sync


async def test_a_hand_edit_to_an_old_daily_note_is_found_after_the_catch_up_walk(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    old = (app.now() - timedelta(days=12)).date()
    note = write(workspace, f"{old}.md", "[08:00] User: plan the garden | Assistant: Tulips.\n")
    first = await prompt_after(app, fake_openai, "what is the wifi password?")
    with note.open("a") as handle:
        handle.write("[09:00] User: the wifi password is marzipan-42 | Assistant: Saved.\n")

    before_sync = await prompt_after(app, fake_openai, "what is the wifi password?")
    assert app.items_index is not None
    app.items_index.index.request(walk=True)  # the walk the index makes at least once a minute
    after_sync = await prompt_after(app, fake_openai, "what is the wifi password?")

    assert "marzipan" not in first and "marzipan" not in before_sync  # a turn syncs its files
    assert "marzipan" not in memory_section(after_sync)  # too old for `# Memory`
    [hit] = [hit for hit in relevant_hits(relevant_section(after_sync)) if "marzipan" in hit.text]
    assert hit.text.split("\n") == [  # the lines of the day's note (memory/<day>.md)
        "- [L1-L2] User: plan the garden | Assistant: Tulips.",
        "  User: the wifi password is marzipan-42 | Assistant: Saved.",
    ]
    assert hit.day == f"## {old}" and f"\n{notes_line('')}\n" in relevant_section(after_sync)


async def test_a_turn_is_searchable_after_it_from_the_files_it_wrote_without_a_walk(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    old = (app.now() - timedelta(days=12)).date()
    write(workspace, f"{old}.md", "[08:00] User: the zeppelin hangar | Assistant: ok.\n")
    fake_openai.script(Reply("Noted. <memory>The boat is called Marlin.</memory>"))

    await say(app, "I prefer jasmine tea in the morning.")

    assert {h.kind for h in await search(app, "jasmine", [""])} == {"note", "exchange", "item"}
    assert {"memory", "item"} <= {h.kind for h in await search(app, "Marlin", [""])}  # tags
    assert await search(app, "zeppelin", [""]) == [], "a file no turn wrote waits for a walk"


async def test_a_conversation_closed_by_new_stays_searchable_after_later_turns(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Got it."), Reply(CONSOLIDATED), Reply("ok"))
    await say(app, "The spare key is under the blue ceramic frog.")
    await say(app, "/new")  # the session goes to the archive
    await say(app, "hello")  # its sync reads the new session, without that exchange

    hits = await search(app, "ceramic frog", [""])

    assert [h.kind for h in hits].count("exchange") == 1


async def test_an_exchange_cut_into_the_archive_stays_searchable_once(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    limits = MemorySettings(memory_window=0, keep_messages=2)  # each turn cuts the one before
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=limits)
    async with started_app(settings) as app:
        fake_openai.script(Reply("Got it."), Reply("ok"), Reply("ok"))
        for text in ("The spare key is under the blue ceramic frog.", "hello", "and again"):
            await say(app, text)
        hits = await search(app, "ceramic frog", [""])

    assert len(list((workspace / "sessions" / "archive").glob("*.json"))) == 2
    assert [h.kind for h in hits].count("exchange") == 1


async def test_a_hand_edit_to_memory_md_past_the_budget_is_found_after_the_next_turn(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    filler = "".join(f"- Line {n}: an ordinary remembered detail.\n" for n in range(60))
    path = write(workspace, "MEMORY.md", "# Facts\n" + filler)
    settings = make_settings(
        workspace,
        telegram=None,
        openai=fake_openai,
        memory=MemorySettings(prompt_budget_tokens=200),
    )
    async with started_app(settings) as app:
        await prompt_after(app, fake_openai, "hello")
        with path.open("a") as handle:
            handle.write("- The boat is moored at pier seven.\n")
        await prompt_after(app, fake_openai, "hello again")  # system 55 syncs the edit
        assert app.items_index is not None
        await app.items_index.index.settle()  # as a moment between two messages lets it
        prompt = await prompt_after(app, fake_openai, "where is the boat moored?")

    assert "pier seven" not in memory_section(prompt)  # the budget shows MEMORY.md's head
    [hit] = [hit for hit in relevant_hits(relevant_section(prompt)) if "pier seven" in hit.text]
    assert re.match(r"- \[MEMORY\.md#L\d+-L62\] ", hit.text)
    assert hit.text.endswith("\n  - The boat is moored at pier seven.")


# ----------------------------------------------------------------------------- rebuild


async def test_a_deleted_index_is_rebuilt_at_start_and_finds_the_same(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    rag = RagSettings(embedder="model2vec", model2vec_path=MODEL2VEC)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, rag=rag)
    write(workspace, "MEMORY.md", "# Boat\nThe boat is moored at pier seven.\n")
    queries = ("boat pier", "tea coffee", "pip install rich")

    async with started_app(settings) as app:
        fake_openai.script(Reply("Noted."), Reply("Run:\n```bash\npip install rich\n```"))
        await say(app, "I prefer tea over coffee.")
        await say(app, "how do I get rich installed?")
        before = {q: await citations(app, q) for q in queries}
        assert app.items_index is not None and app.items_index.index.current is not None
        assert app.items_index.index.current.stats().vectors > 0
    shutil.rmtree(workspace / "index")

    async with started_app(settings) as app:
        after = {q: await citations(app, q) for q in queries}
        assert app.items_index is not None and app.items_index.index.current is not None
        stats = app.items_index.index.current.stats()

    assert after == before
    assert all(before.values())
    assert any("items/semantic.jsonl#" in c or "items/episodic/" in c for c in before["tea coffee"])
    assert stats.embedder.startswith("model2vec:") and stats.vectors > 0


# ----------------------------------------------------------------------------- items


async def test_each_turn_writes_items_and_the_next_prompt_packs_them(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted."), Reply("Run:\n```bash\npip install rich\n```"))
    await say(app, "I prefer tea over coffee.")
    await say(app, "how do I get rich installed?")

    turns = [i for i in items(workspace, "episodic") if i["type"] == "turn"]
    assert [t["text"] for t in turns] == [
        "User: I prefer tea over coffee. | Assistant: Noted.",
        "User: how do I get rich installed? | Assistant: Run: pip install rich",
    ]
    assert [i["text"] for i in items(workspace, "procedural")] == ["pip install rich"]

    prompt = memory_section(await prompt_after(app, fake_openai, "tea or coffee? pip?"))
    assert "I prefer tea over coffee." not in prompt  # the conversation holds both exchanges
    assert "pip install rich" not in prompt

    new_conversation(workspace)
    prompt = memory_section(await prompt_after(app, fake_openai, "tea or coffee? pip?"))
    assert prompt.count("I prefer tea over coffee.") == 1  # today's note holds the statement
    assert prompt.count("pip install rich") == 1 and "## Procedures" not in prompt

    write(workspace, f"{app.now():%Y-%m-%d}.md", "")  # the note lines gone: the items remain
    prompt = memory_section(await prompt_after(app, fake_openai, "tea or coffee? pip?"))
    assert prompt.count("# Memory") == 1
    assert "## Procedures\n- command: `pip install rich`" in prompt
    assert re.search(
        r"## Earlier Episodes\n### \d{4}-\d\d-\d\d\n.*preference: I prefer tea", prompt
    )
    assert prompt.count("I prefer tea over coffee.") == 1  # the statement, inside no turn
    assert app.items_index is not None
    await app.items_index.usage.run()  # what the service does every few minutes and at stop
    shown = items(workspace, "procedural")[0]
    assert shown["last_used_at"] is not None  # marked used by system 50


async def test_items_are_indexed_with_their_file_and_id(app: App, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply("Noted."))
    await say(app, "I prefer jasmine tea in the morning.")

    hits = [h for h in await search(app, "jasmine", [""]) if h.kind == "item"]

    assert hits
    assert all(
        re.fullmatch(r"items/episodic/\d{4}-\d\d-\d\d\.jsonl#e\d{8}-[0-9a-f]{10}", h.path)
        for h in hits
    )


async def test_memory_tags_become_semantic_items_shown_once(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted. <memory>Ann's birthday is 12 May</memory>"))
    await say(app, "remember Ann's birthday")
    fake_openai.script(Reply("Sure. <chat-memory>The group meets on Fridays</chat-memory>"))
    await say(app, "@bot remember our day", chat=GROUP)

    [fact] = items(workspace, "semantic")
    [group_fact] = items(workspace, "semantic", GROUP_DIR)
    # each item cites its source: the MEMORY.md line it was written to, and the turn
    assert (fact["text"], fact["type"]) == ("Ann's birthday is 12 May", "fact")
    line, turn = fact["references"]
    assert line == "MEMORY.md#L2"
    memory_lines = (workspace / "memory" / "MEMORY.md").read_text().splitlines()
    assert memory_lines[1] == "- Ann's birthday is 12 May"
    assert re.fullmatch(r"sessions/telegram%3A1001#turn-[0-9a-f]{12}", turn)
    assert group_fact["text"] == "The group meets on Fridays"
    assert group_fact["references"][0] == f"{GROUP_DIR}/MEMORY.md#L2"
    prompt = await prompt_after(app, fake_openai, "when is Ann's birthday?")
    assert prompt.count("Ann's birthday is 12 May") == 1  # in MEMORY.md, not again as an item

    memory = workspace / "memory" / "MEMORY.md"
    memory.write_text(memory.read_text().replace("- Ann's birthday is 12 May\n", ""))
    prompt = await prompt_after(app, fake_openai, "when is Ann's birthday?")
    # the file is the truth: its line deleted by hand, the item made of it is retired
    assert "Ann's birthday is 12 May" not in memory_section(prompt)
    [fact] = items(workspace, "semantic")
    assert fact["status"] == "retired"


async def test_consolidation_facts_become_indexed_semantic_items(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    write(workspace, "MEMORY.md", "# Facts\n- Ann likes green tea.\n")
    update = "# Facts\n- Ann likes green tea.\n- Ann works at the harbour office.\n"
    answer = Reply(
        json.dumps({"history_entry": "[2026-11-21 10:00] Talk.", "memory_update": update})
    )
    limits = MemorySettings(memory_window=6, keep_messages=2)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=limits)
    async with started_app(settings) as app:
        for n in range(1, 5):
            fake_openai.script(Reply(f"r{n}"), *([answer] if n == 4 else []))
            await say(app, f"m{n}")
        consolidator = next(s for s in app.services if isinstance(s, Consolidator))
        await asyncio.wait_for(consolidator.wait_idle(), timeout=10)
        hits = await search(app, "harbour office", [""])

    [fact] = items(workspace, "semantic")
    [line] = fact["references"]  # its source: the MEMORY.md line consolidation wrote
    number = int(line.removeprefix("MEMORY.md#L"))
    memory = (workspace / "memory" / "MEMORY.md").read_text().splitlines()
    assert fact["text"] == "Ann works at the harbour office."
    assert memory[number - 1].endswith("Ann works at the harbour office.")
    assert any(h.kind == "item" and h.path == f"items/semantic.jsonl#{fact['id']}" for h in hits)


async def test_idle_items_decay_when_the_app_starts(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    old, fresh = "2026-01-01T10:00:00+00:00", "2099-01-01T10:00:00+00:00"
    lines = [
        {"version": 1, "id": "s-0000000001", "layer": "semantic", "type": "fact",
         "text": "The old fact.", "fingerprint": "a", "created_at": old, "updated_at": old,
         "salience": 0.8},
        {"version": 1, "id": "s-0000000002", "layer": "semantic", "type": "fact",
         "text": "The fresh fact.", "fingerprint": "b", "created_at": fresh, "updated_at": fresh,
         "salience": 0.8},
    ]  # fmt: skip
    write(workspace, "items/semantic.jsonl", "".join(json.dumps(x) + "\n" for x in lines))

    async with started_app(make_settings(workspace, telegram=None, openai=fake_openai)):
        pass
    off = ItemSettings(decay_enabled=False)
    write(workspace, f"{GROUP_DIR}/items/semantic.jsonl", json.dumps(lines[0]) + "\n")
    no_decay = make_settings(
        workspace, telegram=None, openai=fake_openai, memory=MemorySettings(items=off)
    )
    async with started_app(no_decay):
        pass

    decayed, kept = items(workspace, "semantic")
    assert (decayed["salience"], decayed["decayed_at"] is not None) == (0.4, True)
    assert (kept["salience"], kept["decayed_at"]) == (0.8, None)
    [untouched] = items(workspace, "semantic", GROUP_DIR)
    assert (untouched["salience"], untouched.get("decayed_at")) == (0.8, None)


async def test_with_recall_off_there_is_no_index_and_items_still_pack(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    off = RagSettings(enabled=False)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, rag=off)
    async with started_app(settings) as app:
        fake_openai.script(Reply("Noted."))
        await say(app, "I prefer tea over coffee.")
        new_conversation(workspace)
        write(workspace, f"{app.now():%Y-%m-%d}.md", "")  # the note line would hold it
        prompt = await prompt_after(app, fake_openai, "tea?")
        assert app.items_index is not None and app.items_index.index.current is None

    assert not (workspace / "index").exists()
    assert "# Relevant Memory" not in prompt
    assert "preference: I prefer tea over coffee." in memory_section(prompt)
