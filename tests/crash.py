"""A crash run: the bot as a process (`python -m bot run`, as `make run` starts it) against the
fake Bot API and model, bursts of messages from several chats, SIGKILL and SIGTERM at random
points, then a last start that answers what is left. `tests/test_crash.py` asserts on its
figures; `benchmarks/crash_run.py` prints them for larger runs.

What it counts, from outside the code (the fakes' records and the workspace's files):
- lost: a message never answered; duplicated: answered more than once, but for a reply sent in
  the last `IN_FLIGHT` seconds before a SIGKILL (in flight: the one window no journal closes,
  between Telegram taking a part and the bot's record of it; counted apart);
- recalled: model calls for a message whose answer was already in a session file when the
  bot was killed (it must be sent from there, not made again);
- extra calls: model calls beyond one per message (a kill during a call may cost one);
- broken files: a JSON or JSONL file in the workspace that does not parse;
- history: HISTORY.md and the monthly files holding different entries, or one entry twice;
- unnoted / noted twice: an answered message with no daily-note line, or more than one.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, bot_env, start_bot_process

TEXT = re.compile(r"^m\d{5}$")
NOTED = re.compile(r"\] User: (m\d{5}) \| Assistant: ")
NOTE_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
IN_FLIGHT = 0.05  # seconds before a SIGKILL in which a reply sent may be sent again
USERS = (OWNER, 2101, 2102, 2103, 2104, 2105, 2106, 2107, 2108, 2109, 2110, 2111, 2112, 2113)


@dataclass
class CrashFigures:
    messages: int
    chats: int
    kills: int  # SIGKILLs
    terms: int  # SIGTERMs
    lost: int = 0
    duplicated: int = 0
    in_flight: int = 0  # answered twice, the first sent just before a SIGKILL
    recalled: int = 0
    extra_calls: int = 0
    broken_files: list[str] = field(default_factory=list)
    history_problems: list[str] = field(default_factory=list)
    unnoted: int = 0  # answered, with no daily-note line
    noted_twice: int = 0  # answered, with more than one
    term_exit_codes: list[int] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)  # a few lost or duplicated messages
    seconds: float = 0.0

    def line(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("term_exit_codes", "examples")}


async def crash_run(
    tmp: Path,
    *,
    chats: int = 3,
    messages: int = 60,
    stops: int = 6,
    sigterm_every: int = 3,
    seed: int = 1,
    window: int = 12,
) -> CrashFigures:
    """`stops` stops (every `sigterm_every`-th a SIGTERM, the rest SIGKILL) while `messages`
    messages from `chats` chats arrive in bursts; then a last run answers what is left."""
    rng = random.Random(seed)
    workspace, log_path = tmp / "ws", tmp / "bot.log"
    users = USERS[:chats]
    texts = [f"m{n:05d}" for n in range(messages)]
    figures = CrashFigures(messages, chats, 0, 0)
    started = time.monotonic()
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        model.answer_all(lambda request: _answer(request, rng))
        env = bot_env(workspace, telegram, model) | {
            "BOT_TELEGRAM__ALLOWED_USER_IDS": json.dumps(list(users[1:])),
            "BOT_TELEGRAM__SHUTDOWN_GRACE": "3",
            "BOT_MEMORY__MEMORY_WINDOW": str(window),
            "BOT_MEMORY__KEEP_MESSAGES": "4",
            "BOT_LOG__LEVEL": "INFO",
        }
        saved_calls: dict[str, int] = {}  # message → model calls when its answer was saved
        in_flight: set[str] = set()  # replies sent just before a SIGKILL
        pushed = 0
        for stop in range(1, stops + 1):
            process = await _started(env, tmp, log_path)
            try:
                burst = rng.randint(1, max(1, 2 * messages // stops))
                for text in texts[pushed : pushed + burst]:
                    user = rng.choice(users)
                    telegram.push_text(user, user, text)
                pushed = min(messages, pushed + burst)
                await asyncio.sleep(rng.uniform(0.2, 2.0) - IN_FLIGHT)
                before = _sent(telegram, users)
                await asyncio.sleep(IN_FLIGHT)
            finally:
                if stop % sigterm_every == 0:
                    process.send_signal(signal.SIGTERM)
                    figures.terms += 1
                    figures.term_exit_codes.append(await _exit(process, 30))
                else:
                    process.kill()
                    figures.kills += 1
                    await _exit(process, 30)
                    in_flight |= (_sent(telegram, users) - before).keys()
            calls = _calls(model)
            for text in _saved(workspace) - saved_calls.keys():
                saved_calls[text] = calls[text]
        for text in texts[pushed:]:
            user = rng.choice(users)
            telegram.push_text(user, user, text)
        process = await _started(env, tmp, log_path)
        try:
            await _all_answered(telegram, users, texts, within=120)
            await asyncio.sleep(0.5)  # a duplicate would come now
        finally:
            process.send_signal(signal.SIGTERM)
            figures.term_exit_codes.append(await _exit(process, 30))
        _count(figures, _sent(telegram, users), texts, _calls(model), saved_calls, in_flight)
    figures.broken_files = _broken_files(workspace)
    figures.history_problems = _history_problems(workspace)
    noted = _noted(workspace)
    figures.unnoted = sum(1 for text in texts if noted[text] == 0)
    figures.noted_twice = sum(1 for text in texts if noted[text] > 1)
    figures.seconds = round(time.monotonic() - started, 1)
    return figures


def _answer(request: dict[str, Any], rng: random.Random) -> Reply:
    messages = request["messages"]
    last = messages[-1].get("content") if messages else None
    if isinstance(last, str) and TEXT.match(last):
        return Reply(f"re: {last}", delay=rng.uniform(0.02, 0.3))
    if "history_entry" in json.dumps(messages):
        entry = f"[2026-11-24 10:00] A consolidation ({rng.getrandbits(32):08x})."
        return Reply(json.dumps({"history_entry": entry, "memory_update": None}))
    return Reply("A short summary of the conversation.")


async def _started(env: dict[str, str], tmp: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """A new bot process, once it logged that it started (a poll still open from the process
    before it is no sign)."""
    starts = _starts(log_path)
    process = start_bot_process(env, tmp, log_path)
    for _ in range(600):
        if _starts(log_path) > starts or process.poll() is not None:
            return process
        await asyncio.sleep(0.05)
    return process


def _starts(log_path: Path) -> int:
    if not log_path.exists():
        return 0
    return log_path.read_text(encoding="utf-8", errors="replace").count('"telegram_started"')


async def _exit(process: subprocess.Popen[bytes], within: float) -> int:
    return await asyncio.to_thread(process.wait, within)


def _calls(model: FakeOpenAI) -> Counter[str]:
    asked: Counter[str] = Counter()
    for request in model.requests:
        last = request["messages"][-1].get("content") if request["messages"] else None
        if isinstance(last, str) and TEXT.match(last):
            asked[last] += 1
    return asked


def _saved(workspace: Path) -> set[str]:
    """Messages whose answer is in a session file (current or archived)."""
    saved: set[str] = set()
    for path in (workspace / "sessions").rglob("*.json"):
        try:
            messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
        except (OSError, ValueError, KeyError):
            continue
        said = {m.get("content") for m in messages if m.get("role") == "assistant"}
        saved |= {m["content"] for m in messages if f"re: {m.get('content')}" in said}
    return saved


async def _all_answered(
    telegram: FakeTelegram, users: tuple[int, ...], texts: list[str], *, within: float
) -> None:
    deadline = time.monotonic() + within
    wanted = {f"re: {text}" for text in texts}
    while time.monotonic() < deadline:
        sent = {m.text for user in users for m in telegram.sent_messages(user)}
        if wanted <= sent:
            return
        await asyncio.sleep(0.2)


def _sent(telegram: FakeTelegram, users: tuple[int, ...]) -> Counter[str]:
    return Counter(m.text for user in users for m in telegram.sent_messages(user))


def _count(
    figures: CrashFigures,
    sent: Counter[str],
    texts: list[str],
    calls: Counter[str],
    saved_calls: dict[str, int],
    in_flight: set[str],
) -> None:
    figures.lost = sum(1 for text in texts if sent[f"re: {text}"] == 0)
    twice = [text for text in texts if sent[f"re: {text}"] > 1]
    figures.in_flight = sum(1 for text in twice if f"re: {text}" in in_flight)
    figures.duplicated = len(twice) - figures.in_flight
    odd = [f"{text}×{sent[f're: {text}']}" for text in texts if sent[f"re: {text}"] != 1]
    figures.examples = odd[:10]
    figures.recalled = sum(1 for text, then in saved_calls.items() if calls[text] > then)
    figures.extra_calls = sum(max(0, calls[text] - 1) for text in texts)


def _broken_files(workspace: Path) -> list[str]:
    broken: list[str] = []
    for path in sorted(workspace.rglob("*.json*")):
        if not path.is_file() or path.suffix not in (".json", ".jsonl"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        documents = text.splitlines() if path.suffix == ".jsonl" else [text]
        try:
            for document in documents:
                if document.strip():
                    json.loads(document)
        except ValueError:
            broken.append(str(path.relative_to(workspace)))
    return broken


def _noted(workspace: Path) -> Counter[str]:
    """How many daily-note lines each message has, in every scope's notes."""
    noted: Counter[str] = Counter()
    for path in (workspace / "memory").rglob("*.md"):
        if NOTE_FILE.match(path.name):
            text = path.read_text(encoding="utf-8", errors="replace")
            noted.update(found[1] for found in NOTED.finditer(text))
    return noted


def _history_problems(workspace: Path) -> list[str]:
    """HISTORY.md and the monthly files must hold the same entries, each once."""
    problems: list[str] = []
    for main in sorted((workspace / "memory").rglob("HISTORY.md")):
        entries = _entries(main)
        monthly: Counter[str] = Counter()
        for month in main.parent.glob("HISTORY-*.md"):
            monthly += _entries(month)
        where = main.parent.relative_to(workspace)
        if any(n > 1 for n in entries.values()):
            problems.append(f"{where}: an entry twice in HISTORY.md")
        if entries != monthly:
            problems.append(f"{where}: HISTORY.md and the monthly files differ")
    return problems


def _entries(path: Path) -> Counter[str]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return Counter(line for line in lines if line.startswith("["))
