"""Answers first: 64 private chats write at once, the model takes 2 s; how long until every
chat has its answer (issue 23: 5.4 s with drafts and the 👀 reaction, 3.97 s before them).

    python benchmarks/busy_chats.py [--chats 64] [--model-seconds 2] [--json]

The whole bot in-process (PTB's `Application` with the rate limiter it runs with) polls the fake
Bot API (`tests/fakes/telegram_api.py`) and streams from the fake model: drafts, the reaction,
typing and the answers all spend the bot's Telegram requests (about 30 a second). The model takes
`--model-seconds` from request to last chunk: half before its first chunk, half over the chunks.
Prints the seconds to the last answer and the requests by method. Exit 1 when the last answer
takes 4 s or more (the goal: under 4 s with a 2 s model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import machine_line
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import make_settings, running_bot

GOAL = 4.0  # seconds to the last answer
PIECES = 6  # of the answer's text
# the fake model pauses after every chunk it streams: the role's, the text's, the finish's and
# the usage's; half the model's time goes before the first, half over these
CHUNKS = 1 + PIECES + 2
FIRST_USER = 5001


async def busy(chats: int, model_seconds: float) -> dict[str, Any]:
    users = tuple(range(FIRST_USER, FIRST_USER + chats))
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        model.answer_all(
            lambda request: Reply(
                "Here is the answer, in a few words.",
                delay=model_seconds / 2,
                pieces=PIECES,
                chunk_delay=model_seconds / 2 / CHUNKS,
            )
        )
        with tempfile.TemporaryDirectory() as folder:
            settings = make_settings(
                Path(folder) / "ws", telegram=telegram, openai=model, allowed_user_ids=users
            )
            production = settings.telegram.model_copy(
                update={"typing_interval": 4.0, "debounce": 0.0}
            )
            settings = settings.model_copy(update={"telegram": production})
            async with running_bot(settings, telegram):
                started = time.perf_counter()
                for user in users:
                    telegram.push_text(user, user, f"hello from {user}")
                await _answered(telegram, users)
                seconds = time.perf_counter() - started
    methods = Counter(call.method for call in telegram.calls if call.method != "getUpdates")
    return {
        "chats": chats,
        "model_seconds": model_seconds,
        "seconds": round(seconds, 2),
        "requests": dict(sorted(methods.items())),
    }


async def _answered(telegram: FakeTelegram, users: tuple[int, ...]) -> None:
    """Until every chat has its answer (a private chat's first message: drafts are not ones)."""
    for user in users:
        await telegram.wait_for_messages(user, 1, timeout=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=64)
    parser.add_argument("--model-seconds", type=float, default=2.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    figures = asyncio.run(busy(args.chats, args.model_seconds))
    if args.json:
        print(json.dumps({"machine": machine_line()}))
        print(json.dumps(figures))
    else:
        print(machine_line())
        print(
            f"{figures['chats']} chats, a {figures['model_seconds']} s model: last answer "
            f"after {figures['seconds']} s (goal: under {GOAL:g} s)"
        )
        print("requests: " + ", ".join(f"{k} {v}" for k, v in figures["requests"].items()))
    return 0 if figures["seconds"] < GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
