"""A replicated run: N bots as processes (`python -m bot run` in webhook mode, each its own
workspace and port, one PostgreSQL), the fake Bot API delivering round robin with Telegram's
per-chat order, retries and 5% duplicate deliveries, and faults at given shares of the replies
sent (`Faults`): a replica SIGKILLed, one SIGTERMed (each started again), one frozen (SIGSTOP)
past its heartbeat then woken, the database stopped and started again. A flood from every chat
at the start, bursts from three chats later. `tests/test_replicas_faults.py` asserts on
its figures; `benchmarks/replicas_run.py` prints them, beside the embedded mode's.

Counted from outside (the fakes' records, the workspaces' files and the database):
- lost: a message never answered; twice: answered more than once, but for a reply one of whose
  copies went out in a kill's or a freeze's window (counted apart, `in_flight`): the
  `IN_FLIGHT` + `RECORD_LAG` seconds before a SIGKILL or a SIGSTOP (a part Telegram took, its
  record not yet written: three replicas, the database and the fakes on two cores may keep a
  process from writing it for tens of milliseconds). Nothing is excused after a SIGCONT: a
  woken replica must send nothing its successor sends (`bot.replicas.lease`);
- reordered: in a chat, a reply whose message came after one answered later;
- overlapping: in a chat, a message's model call made before the previous message's reply was
  sent (its turn started while the one before still ran);
- recalled: a model call for a message whose reply was sent already (its saved answer must be
  sent, not made again), but for one made in a kill's or a freeze's window;
- stuck: a message whose turn was running (on any replica) as a replica froze, not answered
  by the time it woke: each freeze lasts `FREEZE_FOR` times the stall limit, so a chat of the
  frozen replica that waits for it to wake is counted, however slow the machine;
- freezes: how many, and how many came while the frozen replica's session was in the middle of
  a transaction (`pg_stat_activity`: idle in transaction; `FREEZE_STATES`);
- broken files: a JSON or JSONL file in a workspace, or a shared document (`db:<path>`), that
  does not parse;
- left: journal rows not done, and queue jobs left, after the drain (which waits for as long
  as replies keep coming: `QUIET` seconds without one end it).
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from tests.crash import IN_FLIGHT, TEXT, _broken_files
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, bot_env, start_bot_process
from tests.pg import PrivateServer

SECRET = "replicas-run-secret"
STARTED = '"telegram_webhook_started"'
STARTED_POLLING = '"telegram_started"'  # the embedded mode's
HEARTBEAT, STALLED_AFTER = 0.5, 4.0  # seconds (BOT_STORE__…)
BURST_CHATS = 3
DB_AWAY = 1.0  # seconds the database is stopped for
SETTLE = 0.1  # seconds the fake gets to take what a frozen process had sent
RECORD_LAG = 0.2  # seconds a part's record may follow Telegram taking it, on a loaded machine
STALL_LIMIT = STALLED_AFTER + HEARTBEAT  # a stopped replica's chats move on within it
# stall limits a freeze lasts: a held chat moves on within one limit and the time its next
# worker slot takes; a loaded CI machine took 12 s (2.7 limits) once
FREEZE_FOR = 4
IN_TRANSACTION = 5.0  # seconds a freeze waits for its replica to be mid-transaction
QUIET = 60.0  # seconds without a reply after which the drain ends
# where the freezes come, in turn: mid-transaction, mid-statement, anywhere
FREEZE_STATES: tuple[str | None, ...] = ("idle in transaction", "active", None)


@dataclass(frozen=True)
class Faults:
    """At which share of the replies sent each fault comes (None: not in this run)."""

    kill: float | None = 0.3  # SIGKILL the first replica, start it again 1 s later
    term: float | None = None  # SIGTERM the second, start it again once it ended
    # SIGSTOP the third past its lease, then SIGCONT: at each share, the first time as soon as
    # one of its sessions is mid-transaction, then at any point
    freeze: tuple[float, ...] = ()
    restart_db: float | None = None  # stop the database for `DB_AWAY` s (needs `server`)


@dataclass
class ReplicaFigures:
    messages: int
    chats: int
    replicas: int
    lost: int = 0
    twice: int = 0
    in_flight: int = 0
    reordered: int = 0
    overlapping: int = 0
    recalled: int = 0
    repeats_delivered: int = 0  # duplicate deliveries the fake made
    retries: int = 0  # deliveries answered other than 2xx (or not at all)
    answered_500: int = 0  # of which answered 500 (the database away)
    per_replica: dict[str, int] = field(default_factory=dict)  # updates each took (2xx)
    broken_files: list[str] = field(default_factory=list)
    term_exit_codes: list[int] = field(default_factory=list)
    left_open: int = 0
    left_jobs: int = 0
    stuck: int = 0  # running as a replica froze, not answered by the time it woke
    freezes: int = 0
    freezes_mid_transaction: int = 0
    moved_on: float = 0.0  # seconds: the longest from a freeze to a held message's reply
    examples: list[str] = field(default_factory=list)
    drain: float = 0.0  # seconds from the first update to the last reply
    seconds: float = 0.0


@dataclass
class Replica:
    name: str
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    started: str = STARTED  # the log line that says it serves


@dataclass
class Load:
    """What is sent: `flood` messages from every chat at once, `bursts` more from three chats
    in four bursts along the run."""

    chats: int
    flood: int
    bursts: int = 0

    @property
    def messages(self) -> int:
        return self.flood + self.bursts


class Run:
    def __init__(
        self, telegram: FakeTelegram, model: FakeOpenAI, load: Load, seed: int, delay: float = 0.05
    ) -> None:
        self.telegram, self.model, self.load = telegram, model, load
        self.delay = delay  # the model's answer takes up to that many seconds
        self.rng = random.Random(seed)
        self.users = (OWNER, *range(3101, 3100 + load.chats))
        self.texts = [f"m{n:05d}" for n in range(load.messages)]
        self.chat_of: dict[str, int] = {}
        self.asked: list[tuple[str, float]] = []  # (message, when) of each model call
        self.windows: list[tuple[float, float]] = []  # (from, to): a kill's or a freeze's
        self.nodes: list[Replica] = []
        self.term_exit_codes: list[int] = []
        self.held: list[tuple[float, float, set[str]]] = []  # a freeze's (from, to, running)
        self.mid_transaction = 0
        self.pg_url = ""
        self.pushed = 0
        model.answer_all(self._answer)

    def _answer(self, request: dict[str, Any]) -> Reply:
        messages = request["messages"]
        last = messages[-1].get("content") if messages else None
        if isinstance(last, str) and TEXT.match(last):
            self.asked.append((last, time.monotonic()))
            return Reply(f"re: {last}", delay=self.rng.uniform(0.0, self.delay))
        return Reply("A short summary of the conversation.")

    def push(self, count: int, users: tuple[int, ...]) -> None:
        for text in self.texts[self.pushed : self.pushed + count]:
            user = self.rng.choice(users)
            self.chat_of[text] = user
            self.telegram.push_text(user, user, text)
        self.pushed = min(len(self.texts), self.pushed + count)

    def sent(self) -> Counter[str]:
        return Counter(m.text for user in self.users for m in self.telegram.sent_messages(user))

    def answered(self) -> int:
        return sum(1 for text in self.sent() if text.startswith("re: "))

    async def until_share(self, share: float) -> None:
        wanted = int(share * len(self.texts))
        await until(lambda: self.answered() >= wanted, within=120)

    async def signalled(
        self, node: Replica, signum: signal.Signals, *, at_once: bool = False
    ) -> None:
        """Send `signum` (`IN_FLIGHT` s from now, or `at_once`); its window (`windows`): from
        then until the fake took what the process had sent (a killed one has ended, a frozen
        one sends nothing), opened `RECORD_LAG` earlier for a part sent then whose record the
        signal cut off."""
        opened = time.monotonic() - RECORD_LAG
        if not at_once:
            await asyncio.sleep(IN_FLIGHT)
        assert node.process is not None
        node.process.send_signal(signum)
        if signum == signal.SIGKILL:
            await asyncio.to_thread(node.process.wait, 30)
        else:
            await asyncio.sleep(SETTLE)
        self.windows.append((opened, time.monotonic()))

    async def kill(self, node: Replica) -> None:
        await self.signalled(node, signal.SIGKILL)
        await asyncio.sleep(1.0)
        await start_node(node)

    async def term(self, node: Replica) -> None:
        assert node.process is not None
        node.process.send_signal(signal.SIGTERM)
        self.term_exit_codes.append(await asyncio.to_thread(node.process.wait, 30))
        await start_node(node)

    async def freeze(self, node: Replica, *, state: str | None) -> None:
        """Freeze the replica (as soon as one of its sessions is in `state`, when given, if it
        gets there in time) for `FREEZE_FOR` stall limits, noting what was running then, and
        wake it."""
        caught = state is not None and await _in_state(self.pg_url, node.name, state)
        self.mid_transaction += caught and state == "idle in transaction"
        frozen = time.monotonic()
        await self.signalled(node, signal.SIGSTOP, at_once=caught)
        running = await _running(self.pg_url)
        await asyncio.sleep(FREEZE_FOR * STALL_LIMIT)
        assert node.process is not None
        node.process.send_signal(signal.SIGCONT)
        self.held.append((frozen, time.monotonic(), running))


async def _in_state(pg_url: str, name: str, state: str) -> bool:
    """Wait (up to `IN_TRANSACTION` s) until a session of the replica `name` is in `state`
    ('idle in transaction': between two statements of a transaction; 'active': in one);
    whether one was."""
    deadline = time.monotonic() + IN_TRANSACTION
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            cursor = await conn.execute(
                "SELECT 1 FROM pg_stat_activity WHERE application_name = %s AND state = %s",
                (name, state),
            )
            if await cursor.fetchone() is not None:
                return True
            await asyncio.sleep(0.002)
    return False


async def _running(pg_url: str) -> set[str]:
    """The texts of the messages whose turns run now."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT m.inbound->>'text' FROM procrastinate_jobs AS j"
            " JOIN mnemo_inbox AS m ON m.id = j.args->>'update' WHERE j.status = 'doing'"
        )
        return {str(row[0]) for row in await cursor.fetchall()}


async def replicas_run(
    tmp: Path,
    pg_url: str,
    *,
    replicas: int = 3,
    load: Load | None = None,
    faults: Faults = Faults(),
    server: PrivateServer | None = None,
    seed: int = 1,
) -> ReplicaFigures:
    load = load or Load(chats=10, flood=200)
    started = time.monotonic()
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        run = Run(telegram, model, load, seed)
        run.pg_url = pg_url
        telegram.webhook.duplicate_every = 20  # 5% delivered twice
        run.nodes = [replica_node(tmp, f"r{n}", run, pg_url) for n in range(replicas)]
        try:
            await asyncio.gather(*(start_node(node) for node in run.nodes))
            pushed_at = time.monotonic()
            run.push(load.flood, run.users)
            for share, fault in _schedule(run, faults, server):
                await run.until_share(share)
                await fault()
            await drained(run)
            drain = time.monotonic() - pushed_at
            await asyncio.sleep(0.5)  # a duplicate would come now
        finally:
            await stop_nodes(run.nodes)
        figures = _count(run, replicas)
    figures.drain = round(drain, 1)
    figures.broken_files = [b for node in run.nodes for b in _broken_files(node.log.parent / "ws")]
    figures.broken_files += await _broken_documents(pg_url)
    figures.left_open, figures.left_jobs = await _left(pg_url)
    figures.seconds = round(time.monotonic() - started, 1)
    return figures


def _schedule(
    run: Run, faults: Faults, server: PrivateServer | None
) -> list[tuple[float, Callable[[], Awaitable[None]]]]:
    """The faults and the bursts, by the share of replies sent they wait for; a burst
    comes just before the fault of its share, which hits it while it is being delivered."""
    steps: list[tuple[float, Callable[[], Awaitable[None]]]] = []
    if run.load.bursts:
        size = -(-run.load.bursts // 4)
        burst_users = run.users[-BURST_CHATS:]
        for n in range(4):  # along the flood's own replies

            async def burst() -> None:
                run.push(size, burst_users)

            steps.append((round(0.15 + 0.2 * n, 2), burst))
    nodes = run.nodes
    if faults.kill is not None:
        steps.append((faults.kill, lambda: run.kill(nodes[0])))
    if faults.term is not None:
        steps.append((faults.term, lambda: run.term(nodes[1 % len(nodes)])))
    for n, share in enumerate(faults.freeze):

        async def freeze(state: str | None = FREEZE_STATES[n % len(FREEZE_STATES)]) -> None:
            await run.freeze(nodes[2 % len(nodes)], state=state)

        steps.append((share, freeze))
    if faults.restart_db is not None:
        assert server is not None, "a database restart needs a server of the test's own"
        steps.append((faults.restart_db, lambda: _restart(server)))
    return sorted(steps, key=lambda step: step[0])


async def _restart(server: PrivateServer) -> None:
    await asyncio.to_thread(server.stop)
    await asyncio.sleep(DB_AWAY)
    await asyncio.to_thread(server.start)


async def stop_nodes(nodes: list[Replica]) -> None:
    for node in nodes:
        if node.process is not None and node.process.poll() is None:
            node.process.send_signal(signal.SIGCONT)
            node.process.send_signal(signal.SIGTERM)
    for node in nodes:
        if node.process is not None:
            await asyncio.to_thread(node.process.wait, 30)


def replica_node(tmp: Path, name: str, run: Run, pg_url: str | None) -> Replica:
    """A replica's settings; `pg_url` None: the embedded mode (polling, files)."""
    folder = tmp / name
    folder.mkdir(parents=True)
    env = bot_env(folder / "ws", run.telegram, run.model) | {
        "BOT_TELEGRAM__ALLOWED_USER_IDS": json.dumps(list(run.users[1:])),
        "BOT_TELEGRAM__STREAM": "false",
        "BOT_TELEGRAM__SHUTDOWN_GRACE": "3",
        "BOT_MEMORY__MEMORY_WINDOW": "0",
        "BOT_LOG__LEVEL": "INFO",
    }
    if pg_url is None:
        return Replica(name, env, folder / "bot.log", started=STARTED_POLLING)
    port = _free_port()
    env |= {
        "BOT_TELEGRAM__MODE": "webhook",
        "BOT_TELEGRAM__WEBHOOK_URL": f"http://127.0.0.1:{port}/telegram",
        "BOT_TELEGRAM__WEBHOOK_HOST": "127.0.0.1",
        "BOT_TELEGRAM__WEBHOOK_PORT": str(port),
        "BOT_TELEGRAM__WEBHOOK_SECRET": SECRET,
        "BOT_STORE__URL": f"{pg_url}&application_name={name}",
        "BOT_STORE__HEARTBEAT": str(HEARTBEAT),
        "BOT_STORE__STALLED_AFTER": str(STALLED_AFTER),
    }
    return Replica(name, env, folder / "bot.log")


async def start_node(node: Replica) -> None:
    """Start the replica; back once it logged that it serves (or it ended)."""
    starts = _starts(node)
    process = node.process = start_bot_process(node.env, node.log.parent, node.log)
    await until(lambda: _starts(node) > starts or process.poll() is not None, within=60)


def _starts(node: Replica) -> int:
    if not node.log.exists():
        return 0
    return node.log.read_text(encoding="utf-8", errors="replace").count(node.started)


async def drained(run: Run) -> None:
    """Wait until every message is answered, as long as replies keep coming (`QUIET`)."""
    wanted = {f"re: {text}" for text in run.texts}
    answered, quiet_since = -1, time.monotonic()
    while not wanted <= set(sent := run.sent()) and time.monotonic() - quiet_since < QUIET:
        if (now := sum(sent.values())) != answered:
            answered, quiet_since = now, time.monotonic()
        await asyncio.sleep(0.2)


async def until(predicate: Callable[[], bool], *, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.1)


def _count(run: Run, replicas: int) -> ReplicaFigures:
    figures = ReplicaFigures(len(run.texts), run.load.chats, replicas)
    sent, texts = run.sent(), run.texts
    figures.lost = sum(1 for text in texts if sent[f"re: {text}"] == 0)
    twice = [text for text in texts if sent[f"re: {text}"] > 1]
    at = _sent_times(run)
    figures.in_flight = sum(1 for text in twice if _in_window(run, at[text]))
    figures.twice = len(twice) - figures.in_flight
    figures.examples = [f"{t}×{sent[f're: {t}']}" for t in texts if sent[f"re: {t}"] != 1][:10]
    replied = first_sent(run)
    for user in run.users:  # each chat's first replies must come in its messages' order
        firsts = list(dict.fromkeys(m.text for m in run.telegram.sent_messages(user)))
        figures.reordered += sum(1 for a, b in itertools.pairwise(firsts) if a > b)
    figures.overlapping = _overlapping(run, replied)
    again = [(text, at) for text, at in run.asked if at > replied.get(text, at)]
    outside = {text for text, at in again if not _in_window(run, [at])}
    figures.recalled = len(outside)
    figures.in_flight += len({text for text, _ in again} - outside)
    figures.examples += [f"{text} asked again" for text in sorted(outside)][:5]
    attempts = run.telegram.webhook.attempts
    figures.repeats_delivered = sum(1 for a in attempts if a.repeat)
    figures.retries = sum(1 for a in attempts if a.status != 200)
    figures.answered_500 = sum(1 for a in attempts if a.status == 500)
    taken = Counter(a.url.split(":")[-1] for a in attempts if a.status == 200 and not a.repeat)
    figures.per_replica = dict(taken)
    figures.term_exit_codes = run.term_exit_codes
    _count_freezes(run, figures, replied)
    return figures


def _count_freezes(run: Run, figures: ReplicaFigures, replied: dict[str, float]) -> None:
    figures.freezes, figures.freezes_mid_transaction = len(run.held), run.mid_transaction
    for frozen, woken, running in run.held:
        late = [text for text in running if replied.get(text, float("inf")) > woken]
        figures.stuck += len(late)
        figures.examples += [f"{text} waited for the frozen replica" for text in late][:5]
        moved = [replied[text] - frozen for text in running if text not in late]
        figures.moved_on = round(max([figures.moved_on, *moved]), 2)


def _sent_times(run: Run) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {}
    for user in run.users:
        for message in run.telegram.sent_messages(user):
            times.setdefault(message.text.removeprefix("re: "), []).append(message.sent_at)
    return times


def _in_window(run: Run, times: list[float]) -> bool:
    return any(start <= t <= end for t in times for start, end in run.windows)


def first_sent(run: Run) -> dict[str, float]:
    """Each message's first reply: when it was sent."""
    first: dict[str, float] = {}
    for user in run.users:
        for message in run.telegram.sent_messages(user):
            text = message.text.removeprefix("re: ")
            first[text] = min(first.get(text, message.sent_at), message.sent_at)
    return first


def _overlapping(run: Run, replied: dict[str, float]) -> int:
    """Messages whose model call came before the reply to their chat's message before."""
    first_asked: dict[str, float] = {}
    for text, at in run.asked:
        first_asked.setdefault(text, at)
    overlapping = 0
    for user in run.users:
        mine = [text for text in run.texts if run.chat_of.get(text) == user]
        for before, after in itertools.pairwise(mine):
            if first_asked.get(after, float("inf")) < replied.get(before, 0.0):
                overlapping += 1
    return overlapping


async def _left(pg_url: str) -> tuple[int, int]:
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        open_rows = await (
            await conn.execute("SELECT count(*) FROM mnemo_inbox WHERE done_at IS NULL")
        ).fetchone()
        jobs = await (await conn.execute("SELECT count(*) FROM procrastinate_jobs")).fetchone()
    return int(open_rows[0] if open_rows else -1), int(jobs[0] if jobs else -1)


async def _broken_documents(pg_url: str) -> list[str]:
    """The shared JSON and JSONL documents (sessions, items, reminders …) that do not parse."""
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        rows = await (
            await conn.execute(
                "SELECT path, body FROM mnemo_documents "
                "WHERE right(path, 5) = '.json' OR right(path, 6) = '.jsonl' ORDER BY path"
            )
        ).fetchall()
    broken: list[str] = []
    for path, body in rows:
        text = bytes(body).decode("utf-8", errors="replace")
        try:
            for document in text.splitlines() if path.endswith(".jsonl") else [text]:
                if document.strip():
                    json.loads(document)
        except ValueError:
            broken.append(f"db:{path}")
    return broken


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
