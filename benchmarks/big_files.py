"""Big files: the time of a turn over a 5 MB daily note.

`tests/test_memory_bad_input.py` checks that such a note is handled correctly; this times it.

The real app (`bot.app.build_app`, default settings) over a temporary workspace, its model a
server in this process that answers at once. Today's note holds `--lines` exchange lines
(110,000 by default: 5.9 MB, the test's note), in two cases:

- **written while running** — the note appears after start (a note that grew, or a file a
  person pasted in);
- **there at start** — the note is in the workspace when the app starts (the index syncs it).

    python benchmarks/big_files.py [--lines 110000]

Prints per case: start-up, the first turn (whole: pipeline, model request, reply, persist), the
next turn (the note one line longer), and the system messages the model received for the first
turn (tokens). Exits 1 when a first turn takes over 2.0 s.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

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
from bot.app import App, build_app, clock
from bot.llm.tokens import TokenCounter
from bot.logs import configure
from bot.models import Inbound
from bot.settings import LLMSettings, Settings, TelegramSettings

MODEL = "bench-model"
OWNER = 1
GOAL_FIRST_TURN_S = 2.0
CASES = {"running": "written while running", "start": "there at start"}


@dataclass
class Case:
    name: str
    start_s: float = 0.0
    first_s: float = 0.0
    next_s: float = 0.0
    prompt_tokens: int = 0


class Model:
    """Answers at once; keeps the system messages of each request."""

    def __init__(self) -> None:
        self.system: list[str] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        said = [m.get("content") or "" for m in body["messages"] if m["role"] == "system"]
        self.system.append("\n\n".join(said))
        return web.json_response(
            {
                "id": "chatcmpl-big-files",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


def note_text(lines: int) -> str:
    return "".join(
        f"[{i % 24:02d}:{i % 60:02d}] User: message {i} | Assistant: answer {i}\n"
        for i in range(lines)
    )


def settings_for(root: Path, base_url: str) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=root,
        telegram=TelegramSettings(owner_ids=(OWNER,)),
        llm=LLMSettings(
            base_url=base_url, api_key=SecretStr("bench"), model=MODEL, timeout=30, max_retries=0
        ),
    )


def today_note(app: App, root: Path) -> Path:
    return root / "memory" / f"{app.now().date().isoformat()}.md"


async def timed_turn(app: App, turn: int) -> float:
    inbound = Inbound(
        id=f"big:{turn}",
        channel="bench",
        chat_id=OWNER,
        user_id=OWNER,
        text="what do you know?",
        received_at=datetime.now(UTC),
    )
    begun = time.perf_counter()
    await app.router.handle(inbound, Quiet())
    return time.perf_counter() - begun


async def measure(name: str, note: str) -> Case:
    case, model = Case(name), Model()
    with tempfile.TemporaryDirectory(prefix="mnemo-big-", dir=scratch()) as folder:
        root = Path(folder) / "workspace"
        async with serving(model.handle) as base_url:
            settings = settings_for(root, base_url)
            if name == "start":  # today by the app's clock, before the app exists
                (root / "memory").mkdir(parents=True)
                today = clock(settings.timezone)().date()
                (root / "memory" / f"{today.isoformat()}.md").write_text(note)
            begun = time.perf_counter()
            app = build_app(settings, api_key="bench")
            await app.start()
            case.start_s = time.perf_counter() - begun
            try:
                if name == "running":
                    today_note(app, root).parent.mkdir(parents=True, exist_ok=True)
                    today_note(app, root).write_text(note)
                case.first_s = await timed_turn(app, 1)
                case.next_s = await timed_turn(app, 2)
            finally:
                await app.aclose()
    case.prompt_tokens = TokenCounter().count(model.system[0])
    return case


def report(cases: list[Case]) -> list[str]:
    print(f"{'the note':<24}{'start-up':>10}{'first turn':>12}{'next turn':>11}{'prompt':>12}")
    for case in cases:
        print(
            f"{CASES[case.name]:<24}{case.start_s:>8.2f} s{case.first_s:>10.2f} s"
            f"{case.next_s:>9.2f} s{case.prompt_tokens:>8,} tok"
        )
    missed = [
        f"{CASES[case.name]}: first turn {case.first_s:.2f} s > {GOAL_FIRST_TURN_S} s"
        for case in cases
        if case.first_s > GOAL_FIRST_TURN_S
    ]
    print_missed(missed)
    return missed


async def main(lines: int, names: list[str]) -> int:
    configure(fmt="console", level="WARNING")
    print(machine_line(), flush=True)
    note = note_text(lines)
    print(f"today's note: {lines:,} lines, {len(note.encode()) / 1e6:.1f} MB", flush=True)
    skip_sdk_transform()
    cases = [await measure(name, note) for name in names]
    return 1 if report(cases) else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=110_000)
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.lines, arguments.cases)))
