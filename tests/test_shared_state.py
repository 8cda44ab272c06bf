"""The bot's own state under `state/` over both kinds of workspace documents
(`tests.shared_documents`): the group chatter, the undo of /forget, the consolidation jobs and
the usage ledger, as files on this disk and as a replica's (`SplitDocuments`: shared in the
database; skipped without `MNEMO_TEST_PG`). Two workspaces on one set of documents stand for
two replicas: what one keeps, the other finds, and no cache of either serves what the other has
changed since. With replicas nothing of it is on the replica's disk."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.memory.forgetting import Forgetting
from bot.memory.transfer import documents_of, import_documents
from bot.models import GLOBAL_SCOPE, ChatMessage, Said, Usage
from bot.storage.chatter import ChatterStore
from bot.storage.files import Documents, FileDocuments, FileLocks
from bot.storage.jobs import JobStore, new_job
from bot.storage.undo import UndoStore
from bot.storage.workspace import Workspace
from bot.usage.ledger import UsageLedger
from tests.clock import Clock
from tests.shared_documents import WORKSPACES, two_documents

NOW = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)
GROUP = "telegram:-100123"
FIVE_MINUTES = timedelta(minutes=5)


@pytest.fixture(params=WORKSPACES)
async def two(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[Documents]]:
    async with two_documents(request.param, tmp_path) as held:
        yield held


def replicas(two: list[Documents], root: Path) -> list[Workspace]:
    return [Workspace(root, documents) for documents in two]


def on_disk(root: Path) -> list[str]:
    """The files under `state/` on this disk."""
    found = (p for p in (root / "state").rglob("*") if p.is_file())
    return sorted(p.relative_to(root).as_posix() for p in found)


def where(two: list[Documents], *names: str) -> list[str]:
    """`names`, the files the bot keeps alone; none with replicas (they are in the database)."""
    return list(names) if isinstance(two[0], FileDocuments) else []


def chatter(workspace: Workspace, root: Path) -> ChatterStore:
    locks = FileLocks(root / "locks")
    return ChatterStore(workspace, locks, max_messages=3, max_chars=1000)


async def test_chatter_one_replica_keeps_is_pending_on_the_other(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = (chatter(w, tmp_path) for w in replicas(two, tmp_path))
    await first.keep(GROUP, Said("u:1", "Ann", "the keys are under the mat", NOW))
    await second.keep(GROUP, Said("u:2", "Bob", "thanks", NOW))
    await second.keep(GROUP, Said("u:1", "Ann", "the keys are under the mat", NOW))  # replayed
    assert [s.text for s in await first.pending(GROUP)] == ["the keys are under the mat", "thanks"]
    assert on_disk(tmp_path) == where(two, "state/chatter/telegram%3A-100123.json")
    assert await second.forget(GROUP, "keys") == ["the keys are under the mat"]
    await first.drop(GROUP, {"u:2"})
    assert await second.pending(GROUP) == ()


async def test_unreadable_chatter_is_set_aside_where_the_replicas_find_it(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = replicas(two, tmp_path)
    path = first.chatter_path(GROUP)
    first.documents.write(path, b'{"version": 1, "said": [oops')
    assert await chatter(second, tmp_path).pending(GROUP) == ()
    aside = path.with_name(path.name + ".unreadable")
    assert first.documents.read(aside) == b'{"version": 1, "said": [oops'
    assert first.documents.read(path) is None
    first.documents.write(path, b"not json either")
    assert await chatter(second, tmp_path).pending(GROUP) == ()
    assert first.documents.read(aside) == b"not json either"  # the newer one set aside


async def test_forget_on_one_replica_is_undone_on_the_other(
    two: list[Documents], tmp_path: Path
) -> None:
    clock = Clock(NOW)
    holders = []
    for workspace in replicas(two, tmp_path):
        documents = workspace.documents
        undo = UndoStore(workspace.undo_dir, keep=FIVE_MINUTES, now=clock, documents=documents)
        holders.append(Forgetting(workspace, FileLocks(tmp_path / "locks"), undo))
    first, second = holders
    memory = first.workspace.long_term_path(GLOBAL_SCOPE)
    first.documents.write(memory, b"- Likes tea\n- Pin 4321\n")

    forgotten = await first.forget(GLOBAL_SCOPE, "telegram:7", "4321")
    assert forgotten.total == 1 and second.documents.read(memory) == b"- Likes tea\n"
    kept = ["state/undo/telegram%3A7/0.orig", "state/undo/telegram%3A7/manifest.json"]
    assert on_disk(tmp_path) == where(two, *kept)
    assert not await second.expired("telegram:7")
    undone = await second.restore("telegram:7")

    assert undone is not None and undone.restored == 1
    assert first.documents.read(memory) == b"- Likes tea\n- Pin 4321\n"
    assert await first.restore("telegram:7") is None  # undone once, wherever


async def test_the_one_purge_deletes_every_replica_s_expired_undo(
    two: list[Documents], tmp_path: Path
) -> None:
    clock = Clock(NOW)
    first, second = (
        UndoStore(w.undo_dir, keep=FIVE_MINUTES, now=clock, documents=w.documents)
        for w in replicas(two, tmp_path)
    )
    first.begin("telegram:7", "pin")
    first.keep_file(
        "telegram:7",
        tmp_path / "memory" / "MEMORY.md",
        kind="lines",
        original=b"- Pin 4321\n",
        written=b"",
    )
    clock.at = NOW + timedelta(minutes=3)
    first.begin("telegram:8", "tea")
    assert second.purge() == 0
    clock.at = NOW + timedelta(minutes=6)

    assert second.purge() == 1  # the first chat's, kept by the other replica

    assert first.load("telegram:7") is None and not first.expired("telegram:7")
    kept = first.load("telegram:8")
    assert kept is not None and kept.needle == "tea"
    assert [p.relative_to(tmp_path).as_posix() for p in two[1].walk(tmp_path / "state")] == [
        "state/undo/telegram%3A8/manifest.json"
    ]
    assert not (tmp_path / "state" / "undo" / "telegram%3A7").exists()


async def test_a_job_one_replica_kept_is_pending_taken_and_done_once(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = (
        JobStore(w.consolidation_dir, FileLocks(tmp_path / "locks"), w.documents)
        for w in replicas(two, tmp_path)
    )
    messages = (ChatMessage(role="user", content="I moved to Lisbon", at=NOW),)
    job = new_job(GLOBAL_SCOPE, "telegram:7", messages, at=NOW)
    await first.save(job)

    job_file = f"state/consolidation/20261127T093000000000-{job.id}.json"
    assert on_disk(tmp_path) == where(two, job_file)
    assert await second.pending() == [job]
    async with second.taken(job) as to_do:
        assert to_do
        await second.remove(job)
    async with first.taken(job) as to_do:
        assert not to_do  # done by the other replica meanwhile
    assert await first.pending() == []


async def test_an_unreadable_job_is_set_aside_and_the_rest_still_run(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = replicas(two, tmp_path)
    jobs = JobStore(second.consolidation_dir, FileLocks(tmp_path / "locks"), second.documents)
    broken = first.consolidation_dir / "20261127T090000000000-broken.json"
    first.documents.write(broken, b"\xff not a job")
    job = new_job(GLOBAL_SCOPE, "telegram:7", (), at=NOW)
    await jobs.save(job)

    assert await jobs.pending() == [job]
    aside = broken.with_name(broken.name + ".corrupt")
    assert first.documents.read(aside) == b"\xff not a job"
    assert first.documents.read(broken) is None


async def test_usage_recorded_on_either_replica_counts_against_one_day(
    two: list[Documents], tmp_path: Path
) -> None:
    first, second = (
        UsageLedger(
            w.usage_path, FileLocks(tmp_path / "locks"), now=lambda: NOW, documents=w.documents
        )
        for w in replicas(two, tmp_path)
    )
    await first.record("telegram:7", "reply", "m", Usage(100, 20))
    assert second.tokens(NOW.date()) == 120
    await second.record("telegram:7", "reply", "m", Usage(50, 5))
    assert first.tokens(NOW.date(), chat="telegram:7") == 175  # its kept copy is older
    [line] = first.lines()
    assert line.calls == 2
    document = json.loads(two[0].read(first.path) or b"")
    assert document["days"]["2026-11-27"]["telegram:7"]["reply"]["m"]["in"] == 150
    assert on_disk(tmp_path) == where(two, "state/usage.json")


async def test_an_export_and_an_import_leave_the_bot_s_state_alone(
    two: list[Documents], tmp_path: Path
) -> None:
    """Chatter, undo, jobs and the ledger are the bot's, not the person's memory: an export
    carries none of them (as without replicas), and an import over a memory keeps them."""
    workspace = replicas(two, tmp_path)[0]
    documents = workspace.documents
    documents.write(workspace.long_term_path(GLOBAL_SCOPE), b"- Likes tea\n")
    await chatter(workspace, tmp_path).keep(GROUP, Said("u:1", "Ann", "hi", NOW))
    UndoStore(workspace.undo_dir, keep=FIVE_MINUTES, now=lambda: NOW, documents=documents).begin(
        GROUP, "tea"
    )
    state = documents.walk(workspace.state_dir)
    assert len(state) == 2

    exported = documents_of(workspace)
    import_documents(workspace, exported, force=True, now=NOW)

    assert [d.path for d in exported] == ["MEMORY.md"]
    assert documents.walk(workspace.state_dir) == state
    assert documents.read(workspace.long_term_path(GLOBAL_SCOPE)) == b"- Likes tea\n"
