"""`python -m bot usage [--chat KEY]`: what the model spent today and this month, per kind, per
chat, with dollars for models with a price (`bot.usage`). It reads `state/usage.json` only (with
replicas, the one in the database they share), so it runs beside the bot, without a token or a
model key."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bot.app import clock
from bot.app.store import stored_workspace
from bot.settings import Settings
from bot.storage.files import FileLocks
from bot.usage import Prices, UsageLedger
from bot.usage.report import render

Print = Callable[[str], None]


def run(settings: Settings, args: argparse.Namespace, out: Print = print) -> int:
    now = clock(settings.timezone)
    with stored_workspace(settings) as workspace:
        locks = FileLocks(workspace.locks_dir)  # it only reads
        ledger = UsageLedger(workspace.usage_path, locks, now=now, documents=workspace.documents)
        lines = ledger.lines()
    prices = Prices.load(settings.usage.prices_file)
    out(render(lines, prices, today=now().date(), chat=args.chat))
    return 0
