"""The bot's own state with replicas (skipped without `MNEMO_TEST_PG`), each replica with a
workspace folder of its own: a group's chatter kept by one is in the next turn another runs, a
/forget made on one is undone on another, a consolidation job one replica kept and never ran
(it died) is run by another, and what one spent counts on another: the chatter, the undo, the
job, the memory it folds into and the usage ledger are all in the database."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import SecretStr

from bot.app import App, build_app
from bot.app.store import stored_workspace
from bot.cli import spending
from bot.memory.forgetting import Forgetting
from bot.memory.upkeep.consolidation import Consolidator
from bot.memory.upkeep.left import LeftJobs
from bot.models import GLOBAL_SCOPE, ChatMessage, Inbound
from bot.replicas.once import OnceInCluster
from bot.settings import MemorySettings, Settings, StoreSettings
from bot.storage.files import ON_DISK, FileLocks
from bot.storage.jobs import JobStore, new_job
from bot.storage.undo import UndoStore
from bot.storage.workspace import Workspace
from tests.clock import Clock
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import API_KEY, FRIEND, OWNER, STRANGER, make_settings
from tests.talk import GROUP, handle, message
from tests.talk import system_text as context_of

START = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
ENTRY = "[2026-11-27 09:00] Ann moved to Lisbon."
UPDATED = "# Memory\n- Ann lives in Lisbon\n"


def replica(folder: Path, fake: FakeOpenAI, url: str) -> Settings:
    settings = make_settings(folder, telegram=None, openai=fake, memory=MemorySettings())
    return settings.model_copy(update={"store": StoreSettings(url=SecretStr(url))})


@asynccontextmanager
async def running(settings: Settings, clock: Clock) -> AsyncIterator[App]:
    app = build_app(settings, api_key=API_KEY, now=clock)
    await app.start()
    try:
        yield app
    finally:
        await app.aclose()


def parts(app: App) -> tuple[Consolidator, OnceInCluster, LeftJobs]:
    [consolidator] = [s for s in app.services if isinstance(s, Consolidator)]
    [once] = [s for s in app.services if isinstance(s, OnceInCluster)]
    [left] = [s for name, s in once.work if name == "consolidation-left"]
    assert isinstance(left, LeftJobs)
    return consolidator, once, left


async def test_what_a_group_said_on_one_replica_is_in_the_turn_another_runs(
    tmp_path: Path, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    clock = Clock(START)
    one, other = (replica(tmp_path / name, fake_openai, pg_url) for name in ("a", "b"))

    def said(text: str, user: int, name: str, *, to_bot: bool) -> Inbound:
        inbound = message(text, at=clock(), user=user, chat=GROUP)
        return replace(inbound, user_name=name, addressed=to_bot)

    fake_openai.script(Reply("Noon, with pizza."))
    async with running(one, clock) as first, running(other, clock) as second:
        assert await handle(first, said("lunch at noon?", OWNER, "Ann", to_bot=False)) == []
        pizza = said("I'll bring pizza", FRIEND, "Bob", to_bot=False)
        assert await handle(second, pizza) == []
        asked = said("so what's the plan?", OWNER, "Ann", to_bot=True)
        assert await handle(second, asked) == ["Noon, with pizza."]
        assert first.router.chatter is not None
        left = await first.router.chatter.pending(f"telegram:{GROUP}")

    [request] = fake_openai.requests
    assert "\nAnn: lunch at noon?\nBob: I'll bring pizza\n" in context_of(request)
    assert left == ()  # shown once: dropped for every replica
    assert not (tmp_path / "a" / "state" / "chatter").exists()


async def test_a_job_a_dead_replica_left_is_run_by_another_once(
    tmp_path: Path, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    clock = Clock(START)
    dead, alive = (replica(tmp_path / name, fake_openai, pg_url) for name in ("a", "b"))
    messages = (ChatMessage(role="user", content="I moved to Lisbon", at=START),)
    job = new_job(GLOBAL_SCOPE, f"telegram:{OWNER}", messages, at=START)
    fake_openai.script(Reply(json.dumps({"history_entry": ENTRY, "memory_update": UPDATED})))

    async with running(alive, clock) as app:
        consolidator, once, left = parts(app)
        with stored_workspace(dead) as theirs:  # kept by the replica that died before running it
            jobs = JobStore(theirs.consolidation_dir, FileLocks(), theirs.documents)
            await jobs.save(job)
        for _ in range(200):
            if "consolidation-left" in once.running():
                break
            await asyncio.sleep(0.05)
        young = await left.run()  # it may still be running where it was made
        clock.at = START + timedelta(minutes=20)
        taken = await left.run()
        again = await left.run()  # queued already: not twice
        await asyncio.wait_for(consolidator.wait_idle(), timeout=10)
        documents, memory = app.workspace.documents, app.workspace.memory_root

        assert "consolidation-left" in once.running()
        assert (young, taken, again) == (0, 1, 0)
        assert ENTRY in (documents.read(memory / "HISTORY.md") or b"").decode()
        assert documents.read(memory / "MEMORY.md") == UPDATED.encode()
        assert await consolidator.jobs.pending() == []
        assert await left.run() == 0
    asked = [r for r in fake_openai.requests if "I moved to Lisbon" in json.dumps(r)]
    assert len(asked) == 1
    assert not (tmp_path / "b" / "state" / "consolidation").exists()
    assert not (tmp_path / "b" / "memory" / "HISTORY.md").exists()


async def test_a_forget_on_one_replica_is_undone_on_another_with_its_folder_elsewhere(
    tmp_path: Path, pg_url: str
) -> None:
    from bot.replicas.documents import open_documents
    from bot.replicas.shared_documents import SplitDocuments

    clock, held, forgetting = Clock(START), [], []
    for root in (tmp_path / "a", tmp_path / "b"):
        shared = open_documents(pg_url, root)
        shared.connect()
        held.append(shared)
        workspace = Workspace(root, SplitDocuments(shared, ON_DISK, root))
        undo = UndoStore(
            workspace.undo_dir,
            keep=timedelta(minutes=5),
            now=clock,
            documents=workspace.documents,
            root=root,
        )
        forgetting.append(Forgetting(workspace, FileLocks(root / "locks"), undo))
    try:
        first, second = forgetting
        memory = Path("memory/MEMORY.md")
        first.documents.write(tmp_path / "a" / memory, b"- Likes tea\n- Pin 4321\n")

        assert (await first.forget(GLOBAL_SCOPE, "telegram:7", "4321")).total == 1
        undone = await second.restore("telegram:7")

        assert undone is not None and (undone.restored, undone.missing) == (1, ())
        assert second.documents.read(tmp_path / "b" / memory) == b"- Likes tea\n- Pin 4321\n"
        assert not (tmp_path / "b" / memory).exists() and not (tmp_path / "a" / memory).exists()
    finally:
        for shared in held:
            shared.close()


async def test_what_one_replica_spent_counts_on_another_and_in_the_report(
    tmp_path: Path, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    clock = Clock(datetime.now(UTC))  # `python -m bot usage` reports the real today
    one, other = (replica(tmp_path / name, fake_openai, pg_url) for name in ("a", "b"))
    fake_openai.script(Reply("Hello", prompt_tokens=700))

    async with running(one, clock) as first:
        assert await handle(first, message("hi", at=clock())) == ["Hello"]
    async with running(other, clock) as second:
        assert second.spending is not None
        ledger = second.spending.ledger
        spent = await asyncio.to_thread(ledger.tokens, clock().date(), kinds=("reply",))
    printed: list[str] = []
    assert spending.run(other, argparse.Namespace(chat=None), out=printed.append) == 0

    assert spent == 700 + fake_openai.usages[0]["completion_tokens"]
    assert printed[0].startswith("Today") and "700 in" in printed[0]
    assert not (tmp_path / "a" / "state" / "usage.json").exists()


async def test_a_stranger_in_a_group_is_told_once_by_the_cluster(
    tmp_path: Path, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    """Each replica has a door of its own; the notices it told are the cluster's."""
    clock = Clock(START)
    told = []
    for name in ("r1", "r2", "r1"):  # the same stranger, each time through another replica
        async with running(replica(tmp_path / name, fake_openai, pg_url), clock) as app:
            said = replace(message("let me in", at=clock(), user=STRANGER, chat=GROUP))
            told.append(await handle(app, replace(said, user_name="Eve", addressed=True)))

    assert [len(notices) for notices in told] == [1, 0, 0]
    assert "write to me in private" in told[0][0]


async def test_a_stranger_writing_to_two_replicas_at_once_gets_one_pairing_code(
    tmp_path: Path, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    """Both replicas run at the same time and take the stranger's first messages together: the
    roster's row decides, so one of them gives a pairing code and the other says nothing, and a
    later message on either gives no second one."""
    clock = Clock(START)
    async with (
        running(replica(tmp_path / "r1", fake_openai, pg_url), clock) as one,
        running(replica(tmp_path / "r2", fake_openai, pg_url), clock) as two,
    ):
        first = await asyncio.gather(
            *(handle(app, message("hello?", at=clock(), user=STRANGER)) for app in (one, two))
        )
        later = [
            await handle(app, message("hello??", at=clock(), user=STRANGER)) for app in (two, one)
        ]

    said = [text for replies in (*first, *later) for text in replies]
    codes = [text for text in said if "Your pairing code:" in text]
    assert len(codes) == 1, said
