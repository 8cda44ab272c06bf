"""One owner of a memory line (`bot.memory.lines`): the five bullet forms a person writes are one
fact wherever memory reads a line, and a workspace written before that rule reads the same after."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from pathlib import Path

import pytest

from bot.app import App
from bot.memory.items.format import decode
from bot.memory.items.truth import fact_lines
from bot.memory.lines import bare, fact_of, fingerprint, marked, normal
from bot.memory.notes.long_term import new_lines
from bot.memory.notes.supersede import topic_of
from bot.memory.notes.tags import extract_tags
from bot.memory.provenance import SIDE_NAME, of_line
from bot.memory.recall.overlap import flat
from bot.models import Provenance
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import OWNER, make_settings, started_app
from tests.talk import say, tool_result

FORMS = ["- Likes tea", "* Likes tea", "+ Likes tea", "• Likes tea", "1. Likes tea", "Likes tea"]
DAY = date(2026, 11, 20)


@pytest.mark.parametrize("line", FORMS)
def test_each_bullet_form_is_the_same_fact_with_one_fingerprint(line: str) -> None:
    assert bare(line) == fact_of(line) == "Likes tea"
    assert fingerprint(line) == fingerprint("likes tea.") == fingerprint(f"  {line}")
    assert normal(marked(line, DAY)) == "likes tea"
    assert fact_of("## Likes") is None and fact_of("   ") is None


@pytest.mark.parametrize("line", FORMS)
def test_every_reader_of_a_line_agrees_on_its_fact(line: str) -> None:
    item = decode(json.dumps({"version": 1, "id": "s-1", "layer": "semantic", "type": "fact",
                              "text": line, "created_at": "2026-11-20T10:00:00",
                              "updated_at": "2026-11-20T10:00:00"}))  # fmt: skip
    assert item.fingerprint == fingerprint("Likes tea")
    assert list(fact_lines(f"# Drinks\n{line}\n").values()) == ["Likes tea"]
    origin = Provenance(by="Ann (42)", chat="telegram:42", at=item.created_at, via="voice")
    assert of_line({fingerprint("Likes tea"): origin}, line) is origin
    assert extract_tags(f"ok <memory>{line}</memory>").memories == ("Likes tea",)
    assert flat(line) == flat("- Likes tea")
    assert new_lines(line, seen="- Likes tea\n", current="") == []
    moved = line.replace("Likes tea", "I live in Oslo")
    assert topic_of(moved) == topic_of("I moved to Bergen")


async def test_a_tag_in_any_bullet_form_is_stored_as_one_plain_line(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted. <memory>+ Likes tea</memory><memory>1. Likes tea</memory>"))
    await say(app, "tea, always")

    assert (workspace / "memory" / "MEMORY.md").read_text() == "## Remembered\n- Likes tea\n"
    [item] = (workspace / "memory" / "items" / "semantic.jsonl").read_text().splitlines()
    assert json.loads(item)["text"] == "Likes tea"


# ----------------------------------------------------------------------------- an older workspace


def v1_key(fact: str) -> str:
    """The provenance key the bot wrote before `bot.memory.lines` (a `+` bullet counted)."""
    return hashlib.sha256(" ".join(fact.casefold().split()).encode()).hexdigest()[:16]


def old_workspace(root: Path) -> None:
    """What the bot wrote before the one rule, for a tag `<memory>+ Likes tea</memory>` said by
    voice and a `/remember Ann's dentist is Dr Lee`: MEMORY.md, its provenance side file keyed
    by the old fingerprints (no version), and the items."""
    memory = root / "memory"
    (memory / "items").mkdir(parents=True)
    (memory / "MEMORY.md").write_text("## Remembered\n- + Likes tea\n- Ann's dentist is Dr Lee\n")
    said = {"by": f"Ann ({OWNER})", "chat": f"telegram:{OWNER}", "at": "2026-11-20T09:00:00+00:00"}
    side = [
        {"fingerprint": v1_key("+ Likes tea"), **said, "via": "voice"},
        {"fingerprint": v1_key("Ann's dentist is Dr Lee"), **said, "via": "message"},
    ]
    (memory / SIDE_NAME).write_text("".join(json.dumps(line) + "\n" for line in side))
    items = [
        {"version": 1, "id": "s-00000000a1", "layer": "semantic", "type": "fact",
         "text": "+ Likes tea", "fingerprint": v1_key("+ Likes tea"),
         "references": ["MEMORY.md#L2"], "created_at": "2026-11-20T09:00:00+00:00",
         "updated_at": "2026-11-20T09:00:00+00:00", "provenance": {**said, "via": "voice"}},
        {"version": 1, "id": "s-00000000a2", "layer": "semantic", "type": "fact",
         "text": "Ann's dentist is Dr Lee", "fingerprint": v1_key("Ann's dentist is Dr Lee"),
         "references": ["MEMORY.md#L3"], "created_at": "2026-11-20T09:00:00+00:00",
         "updated_at": "2026-11-20T09:00:00+00:00", "provenance": {**said, "via": "message"}},
    ]  # fmt: skip
    semantic = "".join(json.dumps(item, separators=(",", ":")) + "\n" for item in items)
    (memory / "items" / "semantic.jsonl").write_text(semantic)


async def test_an_older_workspace_keeps_every_fact_its_provenance_and_no_twin(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    old_workspace(workspace)
    side = workspace / "memory" / SIDE_NAME
    voice = f"Ann ({OWNER}), said by voice, telegram:{OWNER}, 2026-11-20"
    said = f"Ann ({OWNER}), said, telegram:{OWNER}, 2026-11-20"
    async with started_app(make_settings(workspace, telegram=None, openai=fake_openai)) as app:
        [before] = await say(app, "/memory")
        found = await tool_result(app, fake_openai, "memory_search", {"query": "tea"})
        fake_openai.script(Reply("Noted. <memory>Likes tea</memory>"))
        await say(app, "I like tea")  # the same fact again: no second line, no second item
        await say(app, "/remember Tom likes kites")  # the first write: the side file migrates
        [after] = await say(app, "/memory")

    assert f"- + Likes tea  ({voice})" in before
    assert f"- Ann's dentist is Dr Lee  ({said})" in before
    assert f"Likes tea\n(from: {voice})" in found
    assert f"- + Likes tea  ({voice})" in after and f"- Ann's dentist is Dr Lee  ({said})" in after
    text = (workspace / "memory" / "MEMORY.md").read_text()
    assert text.count("Likes tea") == 1 and "- Tom likes kites" in text
    records = [json.loads(line) for line in side.read_text().splitlines()]
    assert [r["version"] for r in records] == [2, 2, 2]  # once, whole: nothing left in version 1
    assert {r["fingerprint"] for r in records} == {
        fingerprint(fact) for fact in ("Likes tea", "Ann's dentist is Dr Lee", "Tom likes kites")
    }
    items = (workspace / "memory" / "items" / "semantic.jsonl").read_text().splitlines()
    texts = sorted(json.loads(line)["text"] for line in items)
    assert texts == ["+ Likes tea", "Ann's dentist is Dr Lee", "Tom likes kites"]
    assert {json.loads(line)["status"] for line in items} == {"active"}
