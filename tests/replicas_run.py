"""A replicated run: three bots as processes (`python -m bot run` in webhook mode, each its own
workspace and port, one PostgreSQL), the fake Bot API delivering round robin with Telegram's
per-chat order, retries and some duplicate deliveries, one replica SIGKILLed mid-burst and
started again. `tests/test_replicas_processes.py` asserts on its figures.

Counted from outside (the fake's records and the database):
- lost: a message never answered; twice: answered more than once, but for a reply sent in the
  `IN_FLIGHT` seconds before the kill (counted apart, `in_flight`);
- reordered: in a chat, a reply whose message came after one answered later;
- left: journal rows not done, and queue jobs left, after the drain.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import signal
import socket
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from tests.crash import IN_FLIGHT, TEXT
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, bot_env, start_bot_process

SECRET = "replicas-run-secret"
STARTED = '"telegram_webhook_started"'


@dataclass
class ReplicaFigures:
    messages: int
    chats: int
    replicas: int
    lost: int = 0
    twice: int = 0
    in_flight: int = 0
    reordered: int = 0
    repeats_delivered: int = 0  # duplicate deliveries the fake made
    retries: int = 0  # deliveries answered other than 2xx (or not at all)
    per_replica: dict[str, int] = field(default_factory=dict)  # updates each took (2xx)
    left_open: int = 0
    left_jobs: int = 0
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class Replica:
    name: str
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None


async def replicas_run(
    tmp: Path,
    pg_url: str,
    *,
    replicas: int = 3,
    chats: int = 10,
    messages: int = 200,
    seed: int = 1,
) -> ReplicaFigures:
    rng = random.Random(seed)
    users = (OWNER, *range(3101, 3100 + chats))
    texts = [f"m{n:05d}" for n in range(messages)]
    figures = ReplicaFigures(messages, chats, replicas)
    started = time.monotonic()
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        model.answer_all(lambda request: _answer(request, rng))
        telegram.webhook.duplicate_every = 20  # 5% delivered twice
        nodes = [_replica(tmp, f"r{n}", telegram, model, pg_url, users) for n in range(replicas)]
        try:
            await asyncio.gather(*(_start(node) for node in nodes))
            for text in texts:
                user = rng.choice(users)
                telegram.push_text(user, user, text)
            await _until(lambda: len(_sent(telegram, users)) >= messages * 3 // 10, within=90)
            before = _sent(telegram, users)
            await asyncio.sleep(IN_FLIGHT)
            victim = nodes[0]
            assert victim.process is not None
            victim.process.kill()
            await asyncio.to_thread(victim.process.wait, 30)
            in_flight = set((_sent(telegram, users) - before).keys())
            await asyncio.sleep(1.0)
            await _start(victim)
            wanted = {f"re: {text}" for text in texts}
            await _until(lambda: wanted <= set(_sent(telegram, users)), within=120)
            await asyncio.sleep(0.5)  # a duplicate would come now
        finally:
            for node in nodes:
                if node.process is not None and node.process.poll() is None:
                    node.process.send_signal(signal.SIGTERM)
            for node in nodes:
                if node.process is not None:
                    await asyncio.to_thread(node.process.wait, 30)
        _count(figures, telegram, users, texts, in_flight)
    figures.left_open, figures.left_jobs = await _left(pg_url)
    figures.seconds = round(time.monotonic() - started, 1)
    return figures


def _replica(
    tmp: Path,
    name: str,
    telegram: FakeTelegram,
    model: FakeOpenAI,
    pg_url: str,
    users: tuple[int, ...],
) -> Replica:
    folder = tmp / name
    folder.mkdir(parents=True)
    port = _free_port()
    env = bot_env(folder / "ws", telegram, model) | {
        "BOT_TELEGRAM__ALLOWED_USER_IDS": json.dumps(list(users[1:])),
        "BOT_TELEGRAM__MODE": "webhook",
        "BOT_TELEGRAM__WEBHOOK_URL": f"http://127.0.0.1:{port}/telegram",
        "BOT_TELEGRAM__WEBHOOK_HOST": "127.0.0.1",
        "BOT_TELEGRAM__WEBHOOK_PORT": str(port),
        "BOT_TELEGRAM__WEBHOOK_SECRET": SECRET,
        "BOT_TELEGRAM__STREAM": "false",
        "BOT_TELEGRAM__SHUTDOWN_GRACE": "3",
        "BOT_STORE__URL": pg_url,
        "BOT_STORE__HEARTBEAT": "0.5",
        "BOT_STORE__STALLED_AFTER": "2",
        "BOT_MEMORY__MEMORY_WINDOW": "0",
        "BOT_LOG__LEVEL": "INFO",
    }
    return Replica(name, env, folder / "bot.log")


async def _start(node: Replica) -> None:
    """Start the replica; back once it logged that it serves (or it ended)."""
    starts = _starts(node.log)
    node.process = start_bot_process(node.env, node.log.parent, node.log)
    await _until(lambda: _starts(node.log) > starts or node.process.poll() is not None, within=60)


def _starts(log: Path) -> int:
    if not log.exists():
        return 0
    return log.read_text(encoding="utf-8", errors="replace").count(STARTED)


async def _until(predicate: Any, *, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.1)


def _answer(request: dict[str, Any], rng: random.Random) -> Reply:
    messages = request["messages"]
    last = messages[-1].get("content") if messages else None
    if isinstance(last, str) and TEXT.match(last):
        return Reply(f"re: {last}", delay=rng.uniform(0.0, 0.05))
    return Reply("A short summary of the conversation.")


def _sent(telegram: FakeTelegram, users: tuple[int, ...]) -> Counter[str]:
    return Counter(m.text for user in users for m in telegram.sent_messages(user))


def _count(
    figures: ReplicaFigures,
    telegram: FakeTelegram,
    users: tuple[int, ...],
    texts: list[str],
    in_flight: set[str],
) -> None:
    sent = _sent(telegram, users)
    figures.lost = sum(1 for text in texts if sent[f"re: {text}"] == 0)
    twice = [text for text in texts if sent[f"re: {text}"] > 1]
    figures.in_flight = sum(1 for text in twice if f"re: {text}" in in_flight)
    figures.twice = len(twice) - figures.in_flight
    figures.examples = [f"{t}×{sent[f're: {t}']}" for t in texts if sent[f"re: {t}"] != 1][:10]
    for user in users:  # each chat's first replies must come in its messages' order
        firsts: list[str] = []
        for message in telegram.sent_messages(user):
            if message.text not in firsts:
                firsts.append(message.text)
        figures.reordered += sum(1 for a, b in itertools.pairwise(firsts) if a > b)
    attempts = telegram.webhook.attempts
    figures.repeats_delivered = sum(1 for a in attempts if a.repeat)
    figures.retries = sum(1 for a in attempts if a.status != 200)
    taken = Counter(a.url.split(":")[-1] for a in attempts if a.status == 200 and not a.repeat)
    figures.per_replica = dict(taken)


async def _left(pg_url: str) -> tuple[int, int]:
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        open_rows = await (
            await conn.execute("SELECT count(*) FROM mnemo_inbox WHERE done_at IS NULL")
        ).fetchone()
        jobs = await (await conn.execute("SELECT count(*) FROM procrastinate_jobs")).fetchone()
    return int(open_rows[0] if open_rows else -1), int(jobs[0] if jobs else -1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
