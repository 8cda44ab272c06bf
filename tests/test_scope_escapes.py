"""Scopes closed on disk: a symlink planted in a group's memory folder — to the owner's MEMORY.md
or to a file outside the workspace — is never read, written, indexed, archived or forgotten for
the group (one warning names the path, never the content); the owner's files may not lead into
a group's folder either."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.app import App
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import make_settings, started_app
from tests.talk import GROUP, GROUP_DIR, memory_section, prompt_of_turn, say, tool_result, write

TODAY = datetime.now(UTC).date()  # the app's clock runs in UTC here
OLD = TODAY - timedelta(days=40)  # past retention: archiving takes it at start
YESTERDAY = TODAY - timedelta(days=1)
OWNER_MEMORY = "# Vault\n- The vault code is 4411-zebra.\n"
OUTSIDE = "root:x:0:0:the-root-secret-7788:/root:/bin/bash\n"
GROUP_OWN = "[10:00] User: the picnic is at the lighthouse | Assistant: ok\n"
SECRETS = ("4411", "zebra", "7788", "root-secret")
QUERY = "vault code 4411 zebra root secret 7788 spare key mat"
AT = "2026-11-20T09:00:00+00:00"
OWNER_ITEM = {"version": 1, "id": "s-00000000a1", "layer": "semantic", "type": "fact",
              "text": "The spare key is under the zebra mat, code 4411.",
              "fingerprint": "s-00000000a1", "created_at": AT, "updated_at": AT}  # fmt: skip


@pytest.fixture
def planted(workspace: Path, tmp_path: Path) -> dict[str, Path]:
    """The owner's memory, a file outside the workspace, and a group folder full of links to
    them (its own note of yesterday is real)."""
    owner = write(workspace, "MEMORY.md", OWNER_MEMORY)
    owner_items = write(workspace, "items/semantic.jsonl", json.dumps(OWNER_ITEM) + "\n")
    outside = tmp_path / "etc" / "passwd"
    outside.parent.mkdir()
    outside.write_text(OUTSIDE)
    group = write(workspace, f"{GROUP_DIR}/{YESTERDAY}.md", GROUP_OWN).parent
    links = {
        "MEMORY.md": owner,
        f"{TODAY}.md": outside,
        f"{OLD}.md": owner,
        "leak.md": outside,
        "HISTORY.md": owner,
    }
    for name, target in links.items():
        (group / name).symlink_to(target)
    (group / "items").mkdir()
    (group / "items" / "semantic.jsonl").symlink_to(owner_items)
    (workspace / "memory" / "working").mkdir()
    (workspace / "memory" / "working" / f"telegram%3A{GROUP}.md").symlink_to(owner)
    return {"owner": owner, "outside": outside, "group": group}


@pytest.fixture
async def app(
    workspace: Path, fake_openai: FakeOpenAI, planted: dict[str, Path]
) -> AsyncIterator[App]:
    """The app started over the planted workspace (archiving runs at start)."""
    async with started_app(make_settings(workspace, telegram=None, openai=fake_openai)) as app:
        yield app


def unchanged(planted: dict[str, Path]) -> None:
    assert planted["owner"].read_text() == OWNER_MEMORY
    assert planted["outside"].read_text() == OUTSIDE


def no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, secret


async def test_the_groups_prompt_shows_its_own_note_and_nothing_a_link_leads_to(
    app: App, fake_openai: FakeOpenAI, planted: dict[str, Path]
) -> None:
    with capture_logs() as logs:
        prompt = await prompt_of_turn(app, fake_openai, chat=GROUP)

    assert "the picnic is at the lighthouse" in memory_section(prompt)
    no_secret(prompt)
    warned = {e["path"] for e in logs if e["event"] == "memory_file_out_of_scope"}
    assert str(planted["group"] / "MEMORY.md") in warned
    assert str(planted["group"] / f"{TODAY}.md") in warned
    no_secret(repr(logs))  # the path is named, never the content
    unchanged(planted)


async def test_memory_search_and_memory_get_never_reach_what_a_groups_link_leads_to(
    app: App, fake_openai: FakeOpenAI
) -> None:
    found = await tool_result(app, fake_openai, "memory_search", {"query": QUERY}, chat=GROUP)
    owner_found = await tool_result(app, fake_openai, "memory_search", {"query": QUERY})
    got = await tool_result(
        app, fake_openai, "memory_get", {"path": f"{GROUP_DIR}/leak.md"}, chat=GROUP
    )

    no_secret(found)
    assert "spare key" in owner_found and "vault code" in owner_found  # the owner's own
    assert got == "error: refused: that path leads outside its memory folder"


async def test_forget_in_the_group_neither_names_nor_touches_what_its_links_lead_to(
    app: App, planted: dict[str, Path]
) -> None:
    [receipt] = await say(app, "/forget vault code", chat=GROUP)
    [outside] = await say(app, "/forget root", chat=GROUP)

    assert receipt == "Nothing in this chat's memory contains “vault code”."
    assert outside == "Nothing in this chat's memory contains “root”."
    unchanged(planted)
    kept = {f"{YESTERDAY}.md", "items"}
    assert all(p.is_symlink() for p in planted["group"].iterdir() if p.name not in kept)


async def test_archiving_leaves_a_groups_link_where_it_is(
    app: App, planted: dict[str, Path]
) -> None:
    archive = planted["group"] / "archive"

    assert (planted["group"] / f"{OLD}.md").is_symlink()
    assert not archive.exists() or not any(archive.iterdir())
    unchanged(planted)


async def test_the_group_writes_nothing_through_its_links(
    app: App, fake_openai: FakeOpenAI, planted: dict[str, Path]
) -> None:
    fake_openai.script(Reply("Noted. <memory>The group meets on Fridays.</memory>"))
    await say(app, "we meet on Fridays", chat=GROUP)
    [remembered] = await say(app, "/remember the group likes tea", chat=GROUP)

    assert remembered == "MEMORY.md leads outside this chat's memory, so I left it alone."
    unchanged(planted)


async def test_the_owners_memory_may_not_lead_into_a_groups_folder(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    group_memory = write(workspace, f"{GROUP_DIR}/MEMORY.md", "The group's own secret plan.\n")
    (workspace / "memory" / "MEMORY.md").symlink_to(group_memory)
    settings = make_settings(workspace, telegram=None, openai=fake_openai)
    async with started_app(settings) as app:
        prompt = await prompt_of_turn(app, fake_openai)
        found = await tool_result(app, fake_openai, "memory_search", {"query": "secret plan"})

    assert "secret plan" not in prompt
    assert "secret plan" not in found


def _paths(logs: Iterable[Mapping[str, Any]], event: str) -> set[str]:
    return {str(e["path"]) for e in logs if e["event"] == event}


async def test_the_index_drops_what_a_link_held_once_it_leads_out(
    workspace: Path, fake_openai: FakeOpenAI, planted: dict[str, Path]
) -> None:
    settings = make_settings(workspace, telegram=None, openai=fake_openai)
    leak = planted["group"] / "leak.md"
    leak.unlink()
    leak.write_text("the group's harmless note\n")
    async with started_app(settings) as app:
        before = await tool_result(
            app, fake_openai, "memory_search", {"query": "harmless note"}, chat=GROUP
        )
        leak.unlink()
        leak.symlink_to(planted["owner"])
        with capture_logs() as logs:
            assert app.items_index is not None
            app.items_index.index.request(walk=True)  # the catch-up walk: the link is not a turn's
            fake_openai.script(Reply("ok"))
            await say(app, "hello", chat=GROUP)
            after = await tool_result(
                app, fake_openai, "memory_search", {"query": "harmless vault code"}, chat=GROUP
            )

    assert "harmless note" in before
    assert "harmless" not in after
    no_secret(after)
    assert _paths(logs, "index_file_out_of_scope") == {f"{GROUP_DIR}/leak.md"}
    assert len([e for e in logs if e["event"] == "index_file_out_of_scope"]) == 1


async def test_memory_in_the_group_says_its_links_are_left_alone_and_shows_nothing_of_them(
    app: App,
) -> None:
    [answer] = await say(app, "/memory", chat=GROUP)

    assert "MEMORY.md: leads outside this chat's memory (left alone)" in answer
    assert "HISTORY.md: leads outside this chat's memory (left alone); no consolidation" in answer
    assert "No preview: MEMORY.md leads outside this chat's memory (left alone)." in answer
    assert f"{len(OWNER_MEMORY)} bytes" not in answer
    no_secret(answer)
