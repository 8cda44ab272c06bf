"""`python -m bot reminders list`: every chat's reminders and tasks with their next time, from a
shell (the settings and the workspace only: no token, no model; with replicas, the reminders
they share)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

from bot.app.store import stored_workspace
from bot.reminders.store import ReminderStore
from bot.settings import Settings
from bot.storage.files import FileLocks

Print = Callable[[str], None]


def run(settings: Settings, args: argparse.Namespace, out: Print = print) -> int:
    with stored_workspace(settings) as workspace:
        store = ReminderStore(workspace, FileLocks(workspace.locks_dir))  # it only reads
        found = asyncio.run(store.everything())
    if not found:
        out("No reminders.")
        return 0
    for scope, item in sorted(found, key=lambda pair: (pair[1].chat, pair[1].id)):
        kept = store.path(scope).relative_to(workspace.root)
        out(f"{item.chat}  {item.line()}  ({kept})")
    return 0
