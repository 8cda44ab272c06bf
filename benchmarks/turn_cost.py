"""Turn cost: what a turn costs the bot itself, on day 1 and on day 400 (issue 10).

The real app (`bot.app.build_app`, default settings, keyword-only index) answers a conversation
of `--turns` messages in one day from the owner, in this process, against a model server in
the same process that answers at once (~100 tokens; consolidation requests get a small JSON
answer). Per turn it measures the whole turn (`Router.handle`: journal, pipeline, reply,
ledger) and the time spent inside model requests; the difference is the bot's overhead.

Two workspaces:

- **fresh** — empty;
- **year** — a year of use: 365 daily notes of 30 lines, a 150-line MEMORY.md, ~2,000
  structured items (episodic ones over the year, 400 semantic, 200 procedural), notes kept
  for the year (`retention_days = 400`).

    python benchmarks/turn_cost.py [--turns 1000] [--workspaces fresh year]

Prints per workspace: start-up, p50/p95 overhead over the whole run, the p50 overhead around
turn 100 and around the last turn (and their ratio), p50 of the model requests, and RSS idle
(after start) and after the last turn, then the year's overhead p50 over the fresh one's.
Exits 1 when a target is missed: overhead p50 ≤ 20 ms fresh / ≤ 25 ms year, last turn ≤
1.25 × turn 100, RSS growth ≤ 30 MB (issue 10), year ≤ 1.15 × fresh (issue 31).
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import gc
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import (
    SMALL_MODEL,
    Quiet,
    machine_line,
    print_missed,
    rss_mb,
    scratch,
    serving,
    skip_sdk_transform,
    vocabulary,
)
from bot.app import App, build_app
from bot.logs import configure
from bot.memory.items.format import encode
from bot.memory.items.rules import new_item
from bot.models import GLOBAL_SCOPE, Inbound, MemoryLayer
from bot.settings import LLMSettings, MemorySettings, Settings, TelegramSettings

MODEL = "bench-model"
OWNER = 1
DAYS, NOTE_LINES = 365, 30
SEMANTIC, PROCEDURAL, EPISODIC_PER_DAY = 400, 200, 4
AROUND = 20  # turns on each side of turn 100 and of the last turn
GOALS_MS = {"fresh": 20.0, "year": 25.0}
GOAL_GROWTH, GOAL_RSS_MB = 1.25, 30.0
GOAL_YEAR_RATIO = 1.15  # issue 31: a year's turn within this of a fresh one (overhead p50)


class Talk:
    """Words as people use them: Zipf-distributed over a vocabulary of ~3,000 (a few words in
    every message, most words rare), so that keyword search meets what it meets in real use."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.vocabulary = vocabulary(SMALL_MODEL)
        self.weights = [1 / (rank + 10) for rank in range(len(self.vocabulary))]

    def words(self, low: int, high: int) -> str:
        count = self.rng.randint(low, high)
        return " ".join(self.rng.choices(self.vocabulary, self.weights, k=count))


class Model:
    """Answers at once: a turn with ~100 tokens, consolidation with a small JSON object."""

    def __init__(self, talk: Talk) -> None:
        self.talk = talk

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        system = body["messages"][0].get("content") or ""
        if system.startswith("You are a memory consolidation agent"):
            content = json.dumps({"history_entry": "[09:00] Talked about " + self.talk.words(5, 9)})
        elif system.startswith("You compress"):
            content = json.dumps({"memory_update": "- " + self.talk.words(5, 9)})
        else:
            content = self.talk.words(70, 90).capitalize() + "."
        return web.json_response(
            {
                "id": "chatcmpl-turn-cost",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
            }
        )


@dataclass
class Run:
    name: str
    start_s: float = 0.0
    overhead_ms: list[float] = field(default_factory=list)
    model_ms: list[float] = field(default_factory=list)
    rss_idle: float = 0.0
    rss_end: float = 0.0

    def around(self, turn: int) -> float:
        lo, hi = max(0, turn - AROUND), min(len(self.overhead_ms), turn + AROUND)
        return statistics.median(self.overhead_ms[lo:hi])

    @property
    def p50(self) -> float:
        return statistics.median(self.overhead_ms)

    @property
    def p95(self) -> float:
        ordered = sorted(self.overhead_ms)
        return ordered[int(len(ordered) * 0.95) - 1]

    @property
    def growth(self) -> float:
        return self.around(len(self.overhead_ms) - AROUND) / self.around(100)


def settings_for(root: Path, base_url: str, *, year: bool) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=root,
        telegram=TelegramSettings(owner_ids=(OWNER,)),
        llm=LLMSettings(
            base_url=base_url, api_key=SecretStr("bench"), model=MODEL, timeout=30, max_retries=0
        ),
        memory=MemorySettings(retention_days=400) if year else MemorySettings(),
    )


def seed_year(root: Path, talk: Talk, today: date) -> None:
    memory = root / "memory"
    memory.mkdir(parents=True)
    lines = [f"- {talk.words(5, 14)}" for _ in range(150)]
    (memory / "MEMORY.md").write_text("# Long-term\n" + "\n".join(lines) + "\n")
    for back in range(1, DAYS + 1):
        day = today - timedelta(days=back)
        note = "".join(
            f"[{8 + n // 4:02d}:{n * 7 % 60:02d}] User: {talk.words(6, 20)} | "
            f"Assistant: {talk.words(15, 40)}\n"
            for n in range(NOTE_LINES)
        )
        (memory / f"{day.isoformat()}.md").write_text(note)
    seed_items(memory / "items", talk, today)


def seed_items(folder: Path, talk: Talk, today: date) -> None:
    (folder / "episodic").mkdir(parents=True)
    noon = datetime(today.year, today.month, today.day, 12, tzinfo=UTC)

    def item(layer: MemoryLayer, kind: str, text: str, at: datetime) -> str:
        made = new_item(layer, kind, text, scope=GLOBAL_SCOPE, at=at, confidence=0.6, salience=0.5)
        return encode(made) + "\n"

    semantic = (
        item(MemoryLayer.SEMANTIC, "fact", talk.words(5, 12), noon) for _ in range(SEMANTIC)
    )
    (folder / "semantic.jsonl").write_text("".join(semantic))
    procedural = (
        item(MemoryLayer.PROCEDURAL, "command", talk.words(2, 6), noon) for _ in range(PROCEDURAL)
    )
    (folder / "procedural.jsonl").write_text("".join(procedural))
    for back in range(1, DAYS + 1):
        at = noon - timedelta(days=back)
        day = (
            item(MemoryLayer.EPISODIC, "turn", talk.words(10, 30), at)
            for _ in range(EPISODIC_PER_DAY)
        )
        (folder / "episodic" / f"{at.date().isoformat()}.jsonl").write_text("".join(day))


def timed_model(app: App, spent: list[float]) -> None:
    """Adds to `spent` the time of each model request made by the turn this task runs (not by
    background work such as consolidation, whose tasks began before)."""
    llm: Any = app.llm
    inner: Callable[..., Awaitable[Any]] = llm.complete
    in_turn = contextvars.ContextVar("in_turn", default=False)
    in_turn.set(True)

    async def complete(*args: Any, **kwargs: Any) -> Any:
        begun = time.perf_counter()
        try:
            return await inner(*args, **kwargs)
        finally:
            if in_turn.get():
                spent.append(time.perf_counter() - begun)

    llm.complete = complete


async def measure(name: str, turns: int) -> Run:
    run, talk = Run(name), Talk(11)
    with tempfile.TemporaryDirectory(prefix="mnemo-turns-", dir=scratch()) as folder:
        root = Path(folder) / "workspace"
        if name == "year":
            seed_year(root, talk, datetime.now(UTC).date())
        async with serving(Model(talk).handle) as base_url:
            begun = time.perf_counter()
            app = build_app(settings_for(root, base_url, year=name == "year"), api_key="bench")
            await app.start()
            run.start_s = time.perf_counter() - begun
            gc.collect()
            run.rss_idle = rss_mb()
            try:
                await converse(app, talk, turns, run)
            finally:
                await app.aclose()
    return run


async def converse(app: App, talk: Talk, turns: int, run: Run) -> None:
    spent: list[float] = []
    timed_model(app, spent)
    for turn in range(1, turns + 1):
        overhead, model = await one_turn(app, talk, turn, spent)
        run.overhead_ms.append(overhead)
        run.model_ms.append(model)
    gc.collect()
    run.rss_end = rss_mb()


async def one_turn(app: App, talk: Talk, turn: int, spent: list[float]) -> tuple[float, float]:
    """One owner's message through the router: the bot's overhead and the model's time (ms);
    `spent` is what `timed_model` fills."""
    inbound = Inbound(
        id=f"bench:{turn}",
        channel="bench",
        chat_id=OWNER,
        user_id=OWNER,
        text=f"Turn {turn}: what about {talk.words(8, 24)}?",
        received_at=datetime.now(UTC),
    )
    spent.clear()
    begun = time.perf_counter()
    await app.router.handle(inbound, Quiet())
    whole, model = time.perf_counter() - begun, sum(spent)
    return (whole - model) * 1000, model * 1000


def report(runs: list[Run], turns: int) -> list[str]:
    print(f"{turns} turns in one day, one chat; overhead = turn − model requests (ms)")
    header = (
        f"{'workspace':<10}{'start-up':>10}{'p50':>8}{'p95':>8}{'turn 100':>10}"
        f"{'last':>8}{'ratio':>7}{'model p50':>11}{'RSS idle':>10}{'RSS end':>9}"
    )
    print(header)
    missed: list[str] = []
    for run in runs:
        last = run.around(len(run.overhead_ms) - AROUND)
        print(
            f"{run.name:<10}{run.start_s:>9.2f}s{run.p50:>8.1f}{run.p95:>8.1f}"
            f"{run.around(100):>10.1f}{last:>8.1f}{run.growth:>7.2f}"
            f"{statistics.median(run.model_ms):>11.1f}{run.rss_idle:>9.0f}M{run.rss_end:>8.0f}M"
        )
        if run.p50 > GOALS_MS[run.name]:
            missed.append(f"{run.name}: overhead p50 {run.p50:.1f} ms > {GOALS_MS[run.name]} ms")
        if run.growth > GOAL_GROWTH:
            missed.append(f"{run.name}: last turn {run.growth:.2f}× turn 100 > {GOAL_GROWTH}×")
        if run.rss_end - run.rss_idle > GOAL_RSS_MB:
            missed.append(f"{run.name}: RSS grew {run.rss_end - run.rss_idle:.0f} MB")
    by_name = {run.name: run for run in runs}
    if "fresh" in by_name and "year" in by_name:
        ratio = by_name["year"].p50 / by_name["fresh"].p50
        print(f"year / fresh overhead p50: {ratio:.2f} (goal <= {GOAL_YEAR_RATIO})")
        if ratio > GOAL_YEAR_RATIO:
            missed.append(f"year: overhead p50 {ratio:.2f}× fresh > {GOAL_YEAR_RATIO}×")
    print_missed(missed)
    return missed


async def main(turns: int, workspaces: list[str]) -> int:
    configure(fmt="console", level="WARNING")
    print(machine_line(), flush=True)
    skip_sdk_transform()
    runs = [await measure(name, turns) for name in workspaces]
    return 1 if report(runs, turns) else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument(
        "--workspaces", nargs="+", choices=sorted(GOALS_MS), default=["fresh", "year"]
    )
    arguments = parser.parse_args()
    if arguments.turns < 100 + AROUND:
        parser.error(f"--turns must be at least {100 + AROUND}")
    sys.exit(asyncio.run(main(arguments.turns, arguments.workspaces)))
