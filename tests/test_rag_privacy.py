"""Privacy end to end (DESIGN §3): a group's prompt — `# Relevant Memory` included — never holds
the owner's global memory or another chat's, even when the message matches it word for word;
the owner's private chat sees global memory and its own chat's, and nothing of a group's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import App
from bot.settings import RagSettings
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import FRIEND, OWNER, SMALL_MODEL2VEC, make_settings, started_app
from tests.talk import GROUP, GROUP_DIR, OWNER_CHAT_DIR, relevant_section, say, system_text, write

MODEL2VEC = SMALL_MODEL2VEC
OTHER_GROUP = -100777
OTHER_GROUP_DIR = f"chats/telegram%3A{OTHER_GROUP}"
FRIEND_DIR = f"chats/telegram%3A{FRIEND}"

GLOBAL_SECRETS = {
    "vault": "The vault code is 4411-zebra.",
    "safe": "[09:00] User: the safe combination is 7788 walnut | Assistant: Noted.",
    "passport": "My passport number is QX-553 in the blue folder.",
    "tagged": "The spare car key is in the umbrella stand.",
}
OWNER_CHAT_SECRET = "The parrot is named Kiwi-Lemon."
OTHER_GROUP_SECRET = "The marmalade protocol starts at dawn."
GROUP_OWN = "The picnic is on Sunday at the lighthouse."
QUERY = (
    "vault code 4411 zebra, safe combination 7788 walnut, passport QX-553 blue folder, spare car "
    "key umbrella stand, parrot Kiwi-Lemon, marmalade protocol dawn, picnic lighthouse"
)
NEVER_IN_A_GROUP = ("4411", "7788", "QX-553", "umbrella", "Kiwi-Lemon", "marmalade")


@pytest.fixture(params=["none", "model2vec"])
async def app(
    request: pytest.FixtureRequest, workspace: Path, fake_openai: FakeOpenAI
) -> AsyncIterator[App]:
    """The app over a workspace where every scope holds a secret, each in every form memory
    takes: MEMORY.md, an old daily note (only the index has it), an exchange, a tag, an item."""
    write(workspace, "MEMORY.md", f"# Vault\n{GLOBAL_SECRETS['vault']}\n")
    old = "2026-01-05"  # kept out of `# Memory`: only the index can find it
    write(workspace, f"archive/{old}.md", GLOBAL_SECRETS["safe"] + "\n")
    write(workspace, f"{OWNER_CHAT_DIR}/MEMORY.md", OWNER_CHAT_SECRET + "\n")
    write(workspace, f"{OTHER_GROUP_DIR}/MEMORY.md", OTHER_GROUP_SECRET + "\n")
    write(workspace, f"{GROUP_DIR}/MEMORY.md", GROUP_OWN + "\n")
    rag = RagSettings(embedder=request.param, model2vec_path=MODEL2VEC)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, rag=rag)
    async with started_app(settings) as app:
        fake_openai.script(
            Reply("Noted."), Reply(f"Saved. <memory>{GLOBAL_SECRETS['tagged']}</memory>")
        )
        await say(app, f"I prefer tea. {GLOBAL_SECRETS['passport']}")
        await say(app, "remember where the spare car key is")
        fake_openai.script(Reply("Understood."))
        await say(app, f"I prefer marmalade. {OTHER_GROUP_SECRET}", chat=OTHER_GROUP)
        yield app


async def prompt_for(
    app: App, fake: FakeOpenAI, *, user: int = OWNER, chat: int | None = None
) -> str:
    """Everything the model was sent for one turn in that chat but the query itself: memory
    and conversation."""
    fake.script(Reply("ok"))
    assert await say(app, QUERY, user=user, chat=chat) == ["ok"]
    return "\n\n".join(str(m["content"]) for m in fake.requests[-1]["messages"][:-1])


async def test_a_group_prompt_holds_only_the_groups_own_memory(
    app: App, fake_openai: FakeOpenAI
) -> None:
    prompt = await prompt_for(app, fake_openai, chat=GROUP)

    assert GROUP_OWN in prompt
    for secret in NEVER_IN_A_GROUP:
        assert secret not in prompt, secret
    assert "sessions/telegram%3A1001" not in prompt


async def test_another_group_sees_its_own_exchange_and_nothing_of_the_owner(
    app: App, fake_openai: FakeOpenAI
) -> None:
    prompt = await prompt_for(app, fake_openai, chat=OTHER_GROUP)

    assert OTHER_GROUP_SECRET in prompt
    for secret in ("4411", "7788", "QX-553", "umbrella", "Kiwi-Lemon", "picnic"):
        assert secret not in prompt, secret


async def test_another_users_private_chat_sees_no_one_elses_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    write(workspace, f"{FRIEND_DIR}/MEMORY.md", "The friend's bike is red.\n")

    prompt = await prompt_for(app, fake_openai, user=FRIEND)

    assert "The friend's bike is red." in prompt
    for secret in (*NEVER_IN_A_GROUP, "picnic"):
        assert secret not in prompt, secret


async def test_the_owner_sees_global_memory_and_the_own_chat_but_no_group(
    app: App, fake_openai: FakeOpenAI
) -> None:
    prompt = await prompt_for(app, fake_openai)

    for secret in ("4411", "QX-553", "umbrella", "Kiwi-Lemon"):
        assert secret in prompt, secret
    assert "7788 walnut" in relevant_section(prompt)  # only the index had it
    assert "marmalade" not in prompt and "picnic" not in prompt


async def test_a_group_gets_no_relevant_hits_from_a_query_that_only_matches_the_owner(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("ok"))
    await say(app, "safe combination 7788 walnut passport QX-553", chat=GROUP)

    prompt = str(system_text(fake_openai.requests[-1]))
    assert relevant_section(prompt) == ""
    assert app.items_index is not None
    await app.items_index.index.settle()  # the turn's files are synced after it
    hits = app.items_index.index.search("7788 walnut", scopes=[f"telegram:{GROUP}"], k=10)
    assert hits  # the group's own message, indexed after its turn…
    own = (f"sessions/telegram%3A{GROUP}#", f"{GROUP_DIR}/")
    assert all(hit.path.startswith(own) for hit in hits)  # …and nothing else
