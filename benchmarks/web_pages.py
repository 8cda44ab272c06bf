"""Web pages: the memory page's load time on a year of memory, and a turn's cost to the bot with
the page in use (issue 34).

The real app (`bot.app.build_app`, keyword-only index, the page on at a free port of
127.0.0.1) over `turn_cost`'s year workspace — 365 daily notes of 30 lines, a 150-line
MEMORY.md, ~2,000 structured items — and, for the page, what a year leaves beside it: 500
memory receipts (the most kept), 6 group chats with their own MEMORY.md, 40 reminders, two
months of the usage ledger over 7 chats and 2 models, a conversation of `--turns` messages and
20 archived parts of 40 messages. The model is `turn_cost`'s in-process server.

First the owner's conversation: `--turns` turns, in blocks of 25, alternately with the page
idle and with a client loading a page every 0.2 s meanwhile (each page in turn), in the same
process; each turn's overhead is `turn_cost`'s (the turn less its model requests). Then each
page is loaded `--loads` times by a signed-in client over loopback (the whole request: the
server's guard, the page's reads, rendering).

    python benchmarks/web_pages.py [--turns 200] [--loads 30]

Prints per page its p50 and p95 load time and its size, then the turn overhead's p50 with the
page idle and in use. Exits 1 when a page's p50 passes 200 ms, or the overhead's p50 in use
passes idle's by more than 10% and 2 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from urllib.parse import quote
from zoneinfo import ZoneInfo

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import (
    machine_line,
    print_missed,
    scratch,
    serving,
    skip_sdk_transform,
)
from benchmarks.turn_cost import (
    OWNER,
    Model,
    Talk,
    one_turn,
    seed_year,
    settings_for,
    timed_model,
)
from bot.app import App, build_app
from bot.logs import configure
from bot.models import GLOBAL_SCOPE
from bot.reminders.model import Reminder
from bot.reminders.store import ReminderStore
from bot.reminders.when import read_when
from bot.settings import WebSettings
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace, encode_key, file_key
from bot.web.guard import COOKIE
from bot.web.server import WebServer
from bot.web.signin import Visitor

GOAL_MS = 200.0
GOAL_SHARE, GOAL_SLACK_MS = 1.10, 2.0
BLOCK = 25  # turns with the page idle, then as many with it in use
GROUPS, RECEIPTS, REMINDERS, ARCHIVED, ARCHIVED_MESSAGES = 6, 500, 40, 20, 40
CHAT = f"bench:{OWNER}"  # the owner's private chat (the benchmark's channel is "bench")


def seed_page(root: Path, talk: Talk, today: date) -> None:
    """What a year leaves beside the notes: receipts, chats' memory, reminders, usage,
    archived conversations."""
    state, memory = root / "state", root / "memory"
    state.mkdir(parents=True, exist_ok=True)
    receipts = {
        f"{n:08x}": {
            "id": f"{n:08x}", "chat": CHAT, "user": OWNER, "scope": "",
            "text": talk.words(4, 10), "inbound": f"bench:{n}", "shown": True,
            "at": f"{today - timedelta(days=n % 365)}T12:00:00+00:00", "state": "kept",
        }
        for n in range(RECEIPTS)
    }  # fmt: skip
    (state / "receipts.json").write_text(json.dumps({"version": 1, "receipts": receipts,
                                                     "editing": {}}))  # fmt: skip
    for group in range(GROUPS):
        folder = memory / "chats" / encode_key(f"telegram:-{100 + group}")
        folder.mkdir(parents=True)
        lines = "".join(f"- {talk.words(5, 12)}\n" for _ in range(40))
        (folder / "MEMORY.md").write_text("# Memory\n" + lines)
    (state / "usage.json").write_text(json.dumps(_ledger(today)))
    _archived(root, today, talk)


def _ledger(today: date) -> dict[str, object]:
    first = today.replace(day=1) - timedelta(days=31)
    days: dict[str, object] = {}
    for n in range((today - first).days + 1):
        day = first + timedelta(days=n)
        chats = {
            f"telegram:{chat}": {
                kind: {model: {"in": 1200 * (n % 5 + 1), "out": 90, "cached": 600, "calls": 3}
                       for model in ("gpt-4o-mini", "gpt-4o")}
                for kind in ("reply", "consolidation", "compaction")
            }
            for chat in (OWNER, -100, -101, -102, -103, -104, -105)
        }  # fmt: skip
        days[day.isoformat()] = chats
    return {"version": 1, "days": days}


async def seed_reminders(root: Path, today: date, talk: Talk) -> None:
    """Reminders in the owner's chat, through the store the bot keeps them in."""
    workspace = Workspace(root)
    store = ReminderStore(workspace, FileLocks(workspace.locks_dir))
    noon = datetime(today.year, today.month, today.day, 12, tzinfo=UTC)
    for n in range(REMINDERS):
        when = read_when(f"in {n + 1} days", noon, ZoneInfo("UTC"))
        item = Reminder(
            id=f"r{n}", chat=CHAT, channel="bench", chat_id=OWNER, chat_type="private",
            user_id=OWNER, zone="UTC", text=talk.words(3, 8), rule=when, next_at=None,
            created_at=noon,
        ).advanced(noon)  # fmt: skip
        await store.add(GLOBAL_SCOPE, item)


def _archived(root: Path, today: date, talk: Talk) -> None:
    folder = root / "sessions" / "archive"
    folder.mkdir(parents=True)
    for part in range(ARCHIVED):
        at = datetime(today.year, today.month, today.day, tzinfo=UTC) - timedelta(days=part + 1)
        messages = [
            {"role": "user" if n % 2 == 0 else "assistant", "content": talk.words(8, 30),
             "at": (at + timedelta(minutes=n)).isoformat()}
            for n in range(ARCHIVED_MESSAGES)
        ]  # fmt: skip
        document = {
            "version": 1, "key": CHAT, "created_at": at.isoformat(),
            "updated_at": at.isoformat(), "messages": messages,
        }  # fmt: skip
        name = f"{file_key(CHAT)}-{at:%Y%m%dT%H%M%S%f}.json"
        (folder / name).write_text(json.dumps(document))


def pages(talk: Talk) -> list[tuple[str, str]]:
    owner = quote(CHAT)
    return [
        ("memory", "/memory"),
        ("memory, a group's", "/memory?scope=telegram%3A-100"),
        ("what I learned", "/learned"),
        ("search", f"/search?q={talk.words(1, 1)}"),
        ("a hit's source", "/source?path=MEMORY.md&line=75&end=75"),
        ("conversations", "/conversations"),
        ("conversation", f"/conversation?key={owner}"),
        ("conversation, archived", f"/conversation?key={owner}&turn=bench"),
        ("reminders", "/reminders"),
        ("usage", "/usage"),
        ("health", "/health"),
    ]


@asynccontextmanager
async def signed_in(app: App) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    server = next(s for s in app.services if isinstance(s, WebServer))
    started = await server.signins.redeem(await server.signins.link(Visitor(OWNER, CHAT)))
    assert started is not None
    cookies = {COOKIE: started.session}
    async with aiohttp.ClientSession(base_url=server.base_url, cookies=cookies) as client:
        yield client, server.base_url


async def load(client: aiohttp.ClientSession, path: str) -> tuple[float, int]:
    begun = time.perf_counter()
    async with client.get(path, allow_redirects=False) as answer:
        body = await answer.read()
        if answer.status != 200:
            raise RuntimeError(f"{path}: {answer.status}")
    return (time.perf_counter() - begun) * 1000, len(body)


async def converse(app: App, talk: Talk, turns: int, browse: list[str]) -> dict[str, list[float]]:
    """`turns` turns, blocks of `BLOCK` alternating the page idle and in use: each one's
    overhead, by state."""
    spent: list[float] = []
    timed_model(app, spent)
    found: dict[str, list[float]] = {"idle": [], "in use": []}
    async with signed_in(app) as (client, _):
        for block in range(0, turns, BLOCK):
            state = "idle" if block // BLOCK % 2 == 0 else "in use"
            browsing = asyncio.create_task(_browse(client, browse)) if state != "idle" else None
            for turn in range(block, min(turns, block + BLOCK)):
                found[state].append((await one_turn(app, talk, turn, spent))[0])
            if browsing is not None:
                browsing.cancel()
                with suppress(asyncio.CancelledError):
                    await browsing
    return found


async def _browse(client: aiohttp.ClientSession, paths: list[str]) -> None:
    while True:
        for path in paths:
            await load(client, path)
            await asyncio.sleep(0.2)


async def measure(turns: int, loads: int) -> int:
    talk = Talk(34)
    with tempfile.TemporaryDirectory(prefix="mnemo-web-", dir=scratch()) as folder:
        root = Path(folder) / "workspace"
        today = datetime.now(UTC).date()
        seed_year(root, talk, today)
        seed_page(root, talk, today)
        await seed_reminders(root, today, talk)
        async with serving(Model(talk).handle) as base_url:
            settings = settings_for(root, base_url, year=True)
            settings = settings.model_copy(update={"web": WebSettings(enabled=True, port=0)})
            app = build_app(settings, api_key="bench")
            await app.start()
            try:
                browse = [path for _, path in pages(talk)]
                overheads = await converse(app, talk, turns, browse)
                loaded = await load_pages(app, talk, loads)
            finally:
                await app.aclose()
    return report(loaded, overheads, turns, loads)


async def load_pages(app: App, talk: Talk, loads: int) -> list[tuple[str, list[float], int]]:
    found = []
    async with signed_in(app) as (client, _):
        for name, path in pages(talk):
            await load(client, path)  # the first: files read into the OS cache
            times, size = [], 0
            for _ in range(loads):
                took, size = await load(client, path)
                times.append(took)
            found.append((name, times, size))
    return found


def report(
    loaded: list[tuple[str, list[float], int]],
    overheads: dict[str, list[float]],
    turns: int,
    loads: int,
) -> int:
    print(f"each page {loads} times over loopback, signed in as the owner (ms)")
    print(f"{'page':<24}{'p50':>8}{'p95':>8}{'KB':>8}")
    missed: list[str] = []
    for name, times, size in loaded:
        p50, p95 = statistics.median(times), sorted(times)[int(len(times) * 0.95) - 1]
        print(f"{name:<24}{p50:>8.1f}{p95:>8.1f}{size / 1024:>8.0f}")
        if p50 > GOAL_MS:
            missed.append(f"{name}: p50 {p50:.0f} ms > {GOAL_MS:.0f} ms")
    idle, used = (statistics.median(overheads[k]) for k in ("idle", "in use"))
    print(f"{turns} turns, overhead = turn − model requests (ms), p50")
    print(f"{'page idle':<24}{idle:>8.1f}")
    print(f"{'page in use':<24}{used:>8.1f}   ({used / idle:.2f}× idle)")
    if used > idle * GOAL_SHARE and used - idle > GOAL_SLACK_MS:
        missed.append(f"turn overhead with the page in use {used:.1f} ms > idle's {idle:.1f} ms")
    print_missed(missed)
    return 1 if missed else 0


async def main(turns: int, loads: int) -> int:
    configure(fmt="console", level="WARNING")
    print(machine_line(), flush=True)
    skip_sdk_transform()
    return await measure(turns, loads)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--loads", type=int, default=30)
    arguments = parser.parse_args()
    if arguments.turns < 2 * BLOCK:
        parser.error(f"--turns must be at least {2 * BLOCK}")
    sys.exit(asyncio.run(main(arguments.turns, arguments.loads)))
