"""Memory over years: start-up, MEMORY.md, the prompt and consolidation after 30, 365, 730 days.

For each span, a temporary workspace gets that many days of daily notes (20 exchange lines a
day), a ~10 KB MEMORY.md and a HISTORY entry a week, as a user's would after that much use.
Then the real app (`bot.app.build_app`) starts over it — the index is built from the files and
notes past `retention_days` move to the archive — and a conversation runs past `memory_window`
(50 messages) so that one consolidation runs. The model is a small OpenAI-compatible server in
this process that records every request; a consolidation answer adds a HISTORY entry.

    python benchmarks/memory_years.py [--days 30 365 730]

Prints, per span: start-up time (build and start: index sync and archiving), MEMORY.md's size
after start and after the consolidation, the system prompt of a turn (tokens as the model counts
them, and bytes), and the largest consolidation request (tokens and bytes). Exits non-zero when
MEMORY.md passes 12 KB, a consolidation request passes the model's window or none ran. See
benchmarks/README.md for measured figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import (
    Quiet,
    machine_line,
    print_missed,
    scratch,
    serving,
    skip_sdk_transform,
)
from bot.app import App, build_app
from bot.llm.tokens import TokenCounter
from bot.logs import configure
from bot.models import Inbound
from bot.settings import CompactionSettings, LLMSettings, MemorySettings, Settings, TelegramSettings

MODEL = "bench-model"
WINDOW = 128_000  # gpt-4o-mini's
OWNER = 1
LINES_A_DAY = 20
TURNS = 30  # 60 messages: past memory_window (50), one consolidation
GOAL_MEMORY_BYTES = 12 * 1024
CONSOLIDATION = "You are a memory consolidation agent"
MEMORY_MD = "# About me\n" + "".join(
    f"- Fact {n}: something worth keeping about topic {n}, said on a day long ago.\n"
    for n in range(130)
)


@dataclass
class Years:
    days: int
    start_s: float = 0.0
    memory_start: int = 0
    memory_end: int = 0
    prompt_tokens: int = 0
    prompt_bytes: int = 0
    requests: list[tuple[int, int]] = field(default_factory=list)  # consolidation: tokens, bytes


class Model:
    """Answers turns briefly and consolidations with one new fact; records what it receives."""

    def __init__(self) -> None:
        self.counter = TokenCounter()
        self.system_prompts: list[str] = []
        self.consolidations: list[tuple[int, int]] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        system = body["messages"][0]["content"] or ""
        text = json.dumps(body["messages"], ensure_ascii=False)
        tokens = sum(self.counter.count(m.get("content") or "") + 4 for m in body["messages"])
        if system.startswith(CONSOLIDATION):
            self.consolidations.append((tokens, len(text.encode())))
            answer = {"history_entry": "[2026-11-24 09:00] Talked about chores and plans."}
        else:  # the system prompt, `# Memory` and the message's context: each a system message
            said = [m.get("content") or "" for m in body["messages"] if m["role"] == "system"]
            self.system_prompts.append("\n\n".join(said))
            answer = None
        content = json.dumps(answer) if answer else "Sure, noted."
        return web.json_response(_completion(body["model"], content))


def _completion(model: str, content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-years",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def seed(workspace: Path, days: int, today: datetime) -> None:
    memory = workspace / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(MEMORY_MD)
    history = []
    for back in range(days):
        day = (today - timedelta(days=back)).date()
        lines = [
            f"[{9 + n // 4:02d}:{n % 4 * 15:02d}] User: day {back}, question {n} about the garden"
            f" and the week's plans | Assistant: answer {n}: water the basil, call the plumber"
            for n in range(LINES_A_DAY)
        ]
        (memory / f"{day}.md").write_text("\n".join(lines) + "\n")
        if back % 7 == 0:
            history.append(f"## {day}T20:00:00+00:00\nA week of garden talk and plans.\n")
    (memory / "HISTORY.md").write_text("\n".join(reversed(history)))


def settings_for(root: Path, base_url: str) -> Settings:
    models = root / "models.json"
    models.write_text(json.dumps({"version": 1, "context_windows": {MODEL: WINDOW}}))
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=root / "workspace",
        telegram=TelegramSettings(owner_ids=(OWNER,)),
        llm=LLMSettings(
            base_url=base_url, api_key=SecretStr("bench"), model=MODEL, timeout=30, max_retries=0
        ),
        memory=MemorySettings(memory_window=50),
        compaction=CompactionSettings(models_file=models),
    )


async def years(days: int) -> Years:
    model, found = Model(), Years(days)
    today = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="mnemo-years-", dir=scratch()) as folder:
        root = Path(folder)
        seed(root / "workspace", days, today)
        async with serving(model.handle) as base_url:
            started = time.perf_counter()
            app = build_app(settings_for(root, base_url), api_key="bench")
            await app.start()
            found.start_s = time.perf_counter() - started
            memory_md = root / "workspace" / "memory" / "MEMORY.md"
            found.memory_start = memory_md.stat().st_size
            try:
                await talk(app)
            finally:
                await app.aclose()
            found.memory_end = memory_md.stat().st_size
    first = model.system_prompts[0]
    found.prompt_tokens, found.prompt_bytes = TokenCounter().count(first), len(first.encode())
    found.requests = model.consolidations
    return found


async def talk(app: App) -> None:
    for turn in range(1, TURNS + 1):
        inbound = Inbound(
            id=f"years:{turn}",
            channel="bench",
            chat_id=OWNER,
            user_id=OWNER,
            text=f"Turn {turn}: what should I plant next to the basil this week?",
            received_at=datetime.now(UTC),
        )
        await app.router.handle(inbound, Quiet())
    await asyncio.sleep(0.5)  # the consolidation runs in the background
    consolidator = next(s for s in app.services if type(s).__name__ == "Consolidator")
    await asyncio.wait_for(consolidator.wait_idle(), timeout=60)  # type: ignore[attr-defined]


def report(rows: list[Years]) -> list[str]:
    print(
        f"{'days':>5} {'start-up':>9} {'MEMORY.md':>10} {'after':>8} {'prompt':>14} "
        f"{'consolidation (largest)':>25}"
    )
    missed: list[str] = []
    for row in rows:
        tokens, size = max(row.requests, default=(0, 0))
        print(
            f"{row.days:>5} {row.start_s:>8.2f}s {row.memory_start:>9,}B {row.memory_end:>7,}B "
            f"{row.prompt_tokens:>6,} tok {row.prompt_bytes / 1024:>4.1f}KB "
            f"{tokens:>8,} tok {size / 1024:>6.1f}KB ({len(row.requests)})"
        )
        if row.memory_end >= GOAL_MEMORY_BYTES:
            missed.append(f"{row.days} days: MEMORY.md {row.memory_end:,} B >= 12 KB")
        if tokens > WINDOW:
            missed.append(f"{row.days} days: a consolidation request of {tokens:,} tokens")
        if not row.requests:
            missed.append(f"{row.days} days: no consolidation ran")
    print_missed(missed)
    return missed


async def main(spans: list[int]) -> int:
    configure(fmt="console", level="WARNING")
    print(machine_line(), flush=True)
    print(f"{LINES_A_DAY} note lines a day, then {TURNS} turns (memory_window 50)", flush=True)
    skip_sdk_transform()
    rows = [await years(days) for days in spans]
    return 1 if report(rows) else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, nargs="+", default=[30, 365, 730])
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.days)))
