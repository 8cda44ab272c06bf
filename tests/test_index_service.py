"""The index service: syncs asked for are run after the caller goes on, one at a time, merged
while one runs, finished before stop; a search sees every sync asked for before it; a failed
sync is logged and caught up; a catch-up walk finds what no one asked for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.index import MemoryIndex
from bot.index.service import IndexService
from bot.storage.workspace import Workspace
from tests.fakes.embedder import FakeEmbedder

LINE = "[10:00] User: {text} | Assistant: Noted.\n"


def opener(ws: Workspace, embedder: FakeEmbedder) -> Callable[[], MemoryIndex]:
    """The index, its vector side finding only near-copies (the fake's vectors are crude)."""
    return lambda: MemoryIndex(ws.memory_root, ws.index_dir, embedder=embedder, min_similarity=0.9)


def note(ws: Workspace, day: int, text: str) -> Path:
    path = ws.memory_root / f"2026-11-{day:02d}.md"
    with path.open("a") as handle:
        handle.write(LINE.format(text=text))
    return path


def found(service: IndexService, query: str) -> list[str]:
    """Citations of the hits, searched on the event loop's thread (it cannot wait there)."""
    return [hit.citation for hit in service.search(query, scopes=[""], k=5)]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.ensure()
    return ws


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder(hold="slowpoke")


@pytest.fixture
async def service(ws: Workspace, embedder: FakeEmbedder) -> AsyncIterator[IndexService]:
    service = IndexService(opener(ws, embedder))
    await service.start()
    yield service
    embedder.release()
    await service.stop()


async def held(embedder: FakeEmbedder) -> None:
    """Until a sync is held inside the embedder (it runs, holding the index)."""
    assert await asyncio.to_thread(embedder.holding.wait, 5)


async def test_a_request_is_synced_after_the_caller_goes_on_and_settle_waits_for_it(
    ws: Workspace, service: IndexService
) -> None:
    path = note(ws, 20, "the ferry leaves at noon")

    service.request([path])
    before = found(service, "ferry noon")
    await service.settle()

    assert before == [], "the request returned before its sync"
    assert found(service, "ferry noon") == ["2026-11-20.md#L1-L1"]


async def test_requests_made_while_a_sync_runs_are_merged_into_one_sync(
    ws: Workspace, service: IndexService, embedder: FakeEmbedder
) -> None:
    service.request([note(ws, 19, "a slowpoke of a note")])
    await held(embedder)
    for day, text in ((20, "ferry at noon"), (21, "violin at five"), (22, "kettle is broken")):
        service.request([note(ws, day, text)])

    embedder.release()
    await service.settle()

    assert len(embedder.calls) == 2, "the three requests made one sync"
    assert sorted(embedder.calls[1]) == sorted(
        LINE.format(text=text).strip()
        for text in ("ferry at noon", "violin at five", "kettle is broken")
    )


async def test_a_search_from_a_thread_sees_every_sync_asked_for_before_it(
    ws: Workspace, service: IndexService, embedder: FakeEmbedder
) -> None:
    service.request([note(ws, 19, "a slowpoke of a note")])
    await held(embedder)
    service.request([note(ws, 20, "the ferry leaves at noon")])  # waits for the one running

    search = asyncio.create_task(asyncio.to_thread(service.search, "ferry", scopes=[""], k=5))
    await asyncio.sleep(0.05)
    embedder.release()
    hits = await search

    assert [hit.citation for hit in hits] == ["2026-11-20.md#L1-L1"]


async def test_stop_finishes_the_syncs_asked_for_before_it_closes_the_index(
    ws: Workspace, embedder: FakeEmbedder
) -> None:
    service = IndexService(opener(ws, embedder))
    await service.start()

    service.request([note(ws, 20, "the ferry leaves at noon")])
    await service.stop()

    reopened = MemoryIndex(ws.memory_root, ws.index_dir, embedder=embedder)
    report = reopened.sync_files()
    reopened.close()
    assert (report.indexed, report.unchanged) == ((), 1), "indexed before the stop"


async def test_a_failed_sync_is_logged_and_the_next_request_catches_up(
    ws: Workspace, service: IndexService, embedder: FakeEmbedder
) -> None:
    embedder.fail_next = True
    with capture_logs() as logs:
        service.request([note(ws, 20, "the ferry leaves at noon")])
        await service.settle()
    failed = found(service, "ferry")

    service.request([note(ws, 21, "the violin lesson is at five")])
    await service.settle()

    assert failed == []
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["index_sync_failed"]
    assert found(service, "ferry") == ["2026-11-20.md#L1-L1"], "its file was read again"


async def test_a_file_no_one_asked_about_is_found_by_the_catch_up_walk(
    ws: Workspace, embedder: FakeEmbedder
) -> None:
    service = IndexService(opener(ws, embedder), catch_up_seconds=0.1)
    await service.start()
    note(ws, 20, "the ferry leaves at noon")  # a hand edit: no turn wrote it

    for _ in range(250):  # 5 seconds at most
        if hits := found(service, "ferry"):
            break
        await asyncio.sleep(0.02)
    await service.stop()

    assert hits == ["2026-11-20.md#L1-L1"]


async def test_a_walk_asked_for_finds_every_file_and_sync_waits_for_one(
    ws: Workspace, service: IndexService
) -> None:
    note(ws, 20, "the ferry leaves at noon")
    service.request(walk=True)
    await service.settle()
    note(ws, 21, "the violin lesson is at five")
    await service.sync()

    assert found(service, "ferry") == ["2026-11-20.md#L1-L1"]
    assert found(service, "violin") == ["2026-11-21.md#L1-L1"]


async def test_without_an_index_every_call_returns_at_once(ws: Workspace) -> None:
    service = IndexService(None)
    await service.start()

    service.request([ws.memory_root / "2026-11-20.md"], walk=True)
    await asyncio.wait_for(service.settle(), 1)
    await asyncio.wait_for(service.sync(), 1)
    await service.stop()

    assert service.current is None
    assert service.search("ferry", scopes=[""], k=5) == []


async def test_requests_in_a_burst_are_gathered_into_one_sync(
    ws: Workspace, embedder: FakeEmbedder
) -> None:
    service = IndexService(opener(ws, embedder), gather_seconds=0.3)
    await service.start()
    try:
        with capture_logs() as logs:
            for n, text in enumerate(["ferry at noon", "train at two", "bus at four"]):
                service.request([note(ws, 20 + n, text)])
                await asyncio.sleep(0.05)  # turns a moment apart: inside the gathering
            assert found(service, "ferry noon") == [], "synced before the burst ended"
            await asyncio.sleep(0.6)
            synced = [log for log in logs if log["event"] == "index_synced"]
            assert len(synced) == 1 and synced[0]["indexed"] == 3
            service.request([note(ws, 23, "tram at six")])
            await asyncio.wait_for(service.settle(), 0.2)  # a waiter does not wait for more
        assert found(service, "tram six") == ["2026-11-23.md#L1-L1"]
    finally:
        embedder.release()
        await service.stop()
