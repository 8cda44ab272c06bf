"""Reminders arrive once through kills: the bot as a process (`python -m bot run`) against the
fake Bot API, one-off reminders falling due every fraction of a second, SIGKILL just before and
just after due times, then a last run; every reminder must arrive, none twice (but for one sent
in the last instant before a kill: the one window no journal closes, as `tests/crash.py`)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.models import GLOBAL_SCOPE
from bot.reminders.model import Reminder, decode
from bot.reminders.store import ReminderStore
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from tests.crash import IN_FLIGHT, _exit, _started
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, bot_env

KILLS = 6
PER_RUN = 2  # reminders made due in each run, `SPACING` apart
LEAD = 0.6  # seconds from a run's start to its first due time
SPACING = 0.4
SIDES = (-0.03, 0.0, 0.01, 0.03, 0.06, 0.12)  # the kill, from the run's first due time


def _item(n: int, due: datetime) -> Reminder:
    at = due.isoformat()
    return decode(
        {
            "id": f"r{n:04d}",
            "chat": f"telegram:{OWNER}",
            "channel": "telegram",
            "chat_id": OWNER,
            "chat_type": "private",
            "user_id": OWNER,
            "zone": "UTC",
            "text": f"reminder {n:02d}",
            "kind": "reminder",
            "rule": {"at": at},
            "next_at": at,
            "created_at": at,
        }
    )


def _sent(telegram: FakeTelegram) -> Counter[str]:
    return Counter(m.text for m in telegram.sent_messages(OWNER) if not m.deleted)


async def _all_sent(telegram: FakeTelegram, wanted: set[str], within: float) -> None:
    for _ in range(int(within / 0.1)):
        if wanted <= _sent(telegram).keys():
            return
        await asyncio.sleep(0.1)


@pytest.mark.serial  # its kill windows are timed: `make test` runs it alone
@pytest.mark.timeout(240)
async def test_sigkill_around_due_times_loses_no_reminder_and_sends_none_twice(
    tmp_path: Path,
) -> None:
    workspace, log_path = tmp_path / "ws", tmp_path / "bot.log"
    ws = Workspace(workspace)
    ws.ensure()
    store = ReminderStore(ws, FileLocks(ws.locks_dir))  # the bot's locks, across processes
    wanted: set[str] = set()
    in_flight: set[str] = set()
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        env = bot_env(workspace, telegram, model) | {
            "BOT_REMINDERS__POLL_SECONDS": "0.02",
            "BOT_REMINDERS__LATE_MINUTES": "10",
            "BOT_LOG__LEVEL": "INFO",
        }
        for run in range(KILLS):
            process = await _started(env, tmp_path, log_path)
            try:
                first = time.time() + LEAD
                for k in range(PER_RUN):
                    n = run * PER_RUN + k
                    due = datetime.fromtimestamp(first + k * SPACING, UTC)
                    await store.add(GLOBAL_SCOPE, _item(n, due))
                    wanted.add(f"⏰ reminder {n:02d}")
                moment = first + SIDES[run % len(SIDES)]
                await asyncio.sleep(max(0.0, moment - time.time() - IN_FLIGHT))
                before = _sent(telegram)
                await asyncio.sleep(max(0.0, moment - time.time()))
            finally:
                process.kill()
                await _exit(process, 30)
            in_flight |= (_sent(telegram) - before).keys()
        process = await _started(env, tmp_path, log_path)
        try:
            await _all_sent(telegram, wanted, within=60)
            await asyncio.sleep(0.5)  # a duplicate would come now
        finally:
            process.send_signal(signal.SIGTERM)
            assert await _exit(process, 30) == 0
        sent = _sent(telegram)

    lost = sorted(wanted - sent.keys())
    twice = sorted(text for text in wanted if sent[text] > 1 and text not in in_flight)
    assert lost == [], sent
    assert twice == [], sent
    assert set(sent) == wanted  # nothing else (none marked late: within `LATE_MINUTES`)
    assert sum(sent[t] - 1 for t in in_flight if t in sent) <= KILLS
    assert await store.items(GLOBAL_SCOPE) == []  # every one-off done
    assert list((workspace / "state" / "inbox").glob("*.json")) == []
