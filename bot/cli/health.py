"""`python -m bot health` (Docker's HEALTHCHECK): is the running bot polling Telegram?

Cheap and local, as it runs every minute: the heartbeat the bot beats after every poll
(`bot.storage.heartbeat`) must be recent (one poll, the longest pause after a failed one, and
slack), and must not carry a reason the bot gave for stopping to poll (a rejected token). Exit
0 or 1, one line. It imports the settings and the heartbeat, nothing of the bot's running
parts.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bot.settings import Settings
from bot.storage.heartbeat import Heartbeat
from bot.storage.workspace import Workspace

Print = Callable[[str], None]
HEALTH_SLACK = 60.0  # seconds past one poll and the longest pause after a failed one


def command(settings: Settings, args: argparse.Namespace, out: Print) -> int:
    return health(settings, out)


def health(settings: Settings, out: Print = print) -> int:
    """0 when the bot beat its heartbeat recently enough (one poll, a pause, slack)."""
    heartbeat = Heartbeat(Workspace(settings.workspace).heartbeat_path)
    age = heartbeat.age()
    limit = settings.telegram.poll_timeout + HEALTH_SLACK
    if (reason := heartbeat.reason()) is not None:
        out(f"unhealthy: {reason}")
        return 1
    if age is None:
        out(f"unhealthy: no heartbeat at {heartbeat.path}: the bot has not polled yet")
        return 1
    if age > limit:
        out(f"unhealthy: the bot last polled {age:.0f} s ago (over {limit:g} s): see its log")
        return 1
    out(f"healthy: the bot polled {age:.0f} s ago")
    return 0
