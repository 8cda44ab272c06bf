"""Context building (system 20) on a year of memory, timed per turn (issue 5).

The markdown section, the memory pack and `# Relevant Memory`, as the pipeline builds them.
Prints a table and exits 1 when p95 passes 25 ms.

    python benchmarks/context_build.py [--turns 200] [--embedder none model2vec] [--model PATH]

The workspace: 365 daily notes of ~30 lines each (the last is today's), a MEMORY.md of ~150
lines, ~2,000 structured items (episodic ones spread over the year, 4 a day; 400 semantic; 200
procedural), the index built from them at start as the bot builds it. Words are Zipf-distributed
over the model's vocabulary, as in `index_speed` (`--model`, else `$MNEMO_BENCH_MODEL2VEC`, else
the small model the tests ship; the keyword-only run takes only its words). The system is the
app's own (`build_app`: the real wiring and settings, notes kept for the year:
`retention_days = 400`); each turn's message is a fresh line of the same kind. Between two timed
turns a line is appended to today's note, as system 50 would, so the files the prompt reads change
as they do in a conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import (
    machine_line,
    model_line,
    model_option,
    print_missed,
    scratch,
    vocabulary,
)
from bot import logs
from bot.app import App, build_app
from bot.memory.items.format import encode
from bot.memory.items.rules import new_item
from bot.models import GLOBAL_SCOPE, ChatMessage, Inbound, MemoryLayer, Session
from bot.pipeline import System, TurnContext
from bot.settings import LLMSettings, MemorySettings, RagSettings, Settings, TelegramSettings
from bot.storage.files import append_text

NOTE_LINES = 30
DAYS = 365
SEMANTIC, PROCEDURAL, EPISODIC_PER_DAY = 400, 200, 4
GOAL_P95_MS = 25.0
OWNER = 1
NAMES = {"none": "keyword-only", "model2vec": "hybrid (model2vec)"}


class Words:
    def __init__(self, rng: random.Random, model: Path) -> None:
        self.rng = rng
        self.words = vocabulary(model)
        self.weights = [1 / (rank + 10) for rank in range(len(self.words))]

    def some(self, low: int, high: int) -> str:
        return " ".join(self.rng.choices(self.words, self.weights, k=self.rng.randint(low, high)))

    def note_line(self, hour: int, minute: int) -> str:
        return (
            f"[{hour:02d}:{minute:02d}] User: {self.some(6, 20)} | Assistant: {self.some(15, 40)}"
        )


def workspace(root: Path, words: Words, today: date) -> None:
    memory = root / "memory"
    memory.mkdir(parents=True)
    lines = [f"- {words.some(5, 14)}" for _ in range(150)]
    (memory / "MEMORY.md").write_text("# Long-term\n" + "\n".join(lines) + "\n")
    for back in range(DAYS):
        day = today - timedelta(days=back)
        text = "".join(words.note_line(8 + n // 4, (n * 7) % 60) + "\n" for n in range(NOTE_LINES))
        (memory / f"{day.isoformat()}.md").write_text(text)
    items(memory / "items", words, today)


def items(folder: Path, words: Words, today: date) -> None:
    (folder / "episodic").mkdir(parents=True)
    start = datetime(today.year, today.month, today.day, 12, tzinfo=UTC)
    semantic = [
        _item(MemoryLayer.SEMANTIC, "fact", words.some(5, 12), start) for _ in range(SEMANTIC)
    ]
    procedural = [
        _item(MemoryLayer.PROCEDURAL, "command", words.some(2, 6), start) for _ in range(PROCEDURAL)
    ]
    (folder / "semantic.jsonl").write_text("".join(encode(i) + "\n" for i in semantic))
    (folder / "procedural.jsonl").write_text("".join(encode(i) + "\n" for i in procedural))
    for back in range(DAYS):
        at = start - timedelta(days=back)
        day = [
            _item(MemoryLayer.EPISODIC, "turn", words.some(10, 30), at)
            for _ in range(EPISODIC_PER_DAY)
        ]
        (folder / "episodic" / f"{at.date().isoformat()}.jsonl").write_text(
            "".join(encode(i) + "\n" for i in day)
        )


def _item(layer: MemoryLayer, type: str, text: str, at: datetime) -> Any:
    return new_item(layer, type, text, scope=GLOBAL_SCOPE, at=at, confidence=0.6, salience=0.5)


def settings(root: Path, embedder: str, model: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=root,
        telegram=TelegramSettings(owner_ids=(OWNER,)),
        llm=LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr("unused")),
        memory=MemorySettings(retention_days=400),
        rag=RagSettings(embedder=embedder, model2vec_path=model),  # type: ignore[arg-type]
    )


def context_system(app: App) -> System:
    return next(s for s in [app.preview.context] if s.order == 20)


def turn(app: App, text: str, n: int) -> TurnContext:
    now = app.now()
    inbound = Inbound(
        id=f"b:{n}", channel="telegram", chat_id=OWNER, user_id=OWNER, text=text, received_at=now
    )
    session = Session(key=inbound.session_key, messages=(), created_at=now, updated_at=now)
    return TurnContext(
        inbound=inbound,
        turn_id=f"t{n}",
        scope=GLOBAL_SCOPE,
        session=session,
        user_message=ChatMessage(role="user", content=text),
    )


@dataclass(frozen=True)
class Build:
    embedder: str
    index_build_s: float
    p50_ms: float
    p95_ms: float
    max_ms: float
    prompt_chars: int  # p50, the whole request (memory, context, the message)


async def measure(root: Path, embedder: str, model: Path, words: Words, turns: int) -> Build:
    started = time.perf_counter()
    app = build_app(settings(root, embedder, model), api_key="unused")
    await app.start()  # opens the index: the files synced, the items added
    built = time.perf_counter() - started
    system = context_system(app)
    note = root / "memory" / f"{app.now().date().isoformat()}.md"
    times, sizes = [], []
    try:
        for n in range(turns + 1):
            ctx = turn(app, words.some(6, 20), n)
            begun = time.perf_counter()
            await system.process(ctx)
            if n:  # the first turn warms the caches
                times.append((time.perf_counter() - begun) * 1000)
                sizes.append(sum(len(m.content or "") for m in ctx.request()))
            append_text(note, words.note_line(23, n % 60) + "\n")
    finally:
        await app.aclose()
    times.sort()
    p95 = times[int(len(times) * 0.95) - 1]
    return Build(
        embedder, built, statistics.median(times), p95, times[-1], int(statistics.median(sizes))
    )


async def run(turns: int, embedders: list[str], model: Path) -> list[Build]:
    builds = []
    for embedder in embedders:
        with tempfile.TemporaryDirectory(prefix="mnemo-context-", dir=scratch()) as folder:
            words = Words(random.Random(11), model)
            root = Path(folder) / "ws"
            workspace(root, words, datetime.now(UTC).date())
            builds.append(await measure(root, embedder, model, words, turns))
    return builds


def report(builds: list[Build]) -> list[str]:
    print(f"{'':<20}{'index build':>12}{'p50':>10}{'p95':>10}{'max':>9}{'prompt':>15}")
    for build in builds:
        print(
            f"{NAMES[build.embedder]:<20}{build.index_build_s:>10.2f} s"
            f"{build.p50_ms:>7.1f} ms{build.p95_ms:>7.1f} ms{build.max_ms:>6.0f} ms"
            f"{build.prompt_chars:>9,} chars"
        )
    missed = [
        f"{NAMES[build.embedder]}: p95 {build.p95_ms:.1f} ms > {GOAL_P95_MS} ms"
        for build in builds
        if build.p95_ms > GOAL_P95_MS
    ]
    print_missed(missed)
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument(
        "--embedder", nargs="+", choices=sorted(NAMES), default=["none", "model2vec"]
    )
    model_option(parser)
    args = parser.parse_args()
    logs.configure(fmt="console", level="WARNING")  # figures on stdout, warnings on stderr
    print(machine_line(), flush=True)
    print(f"{model_line(args.model)} (its vocabulary makes the words)")
    items = SEMANTIC + PROCEDURAL + DAYS * EPISODIC_PER_DAY
    print(f"{DAYS} daily notes of {NOTE_LINES} lines, {items:,} items; {args.turns} turns timed")
    builds = asyncio.run(run(args.turns, args.embedder, args.model))
    return 1 if report(builds) else 0


if __name__ == "__main__":
    sys.exit(main())
