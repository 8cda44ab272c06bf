"""`python -m bot usage [--chat KEY]`: what the model spent today and this month, per kind, per
chat, with dollars for models with a price (`bot.usage`). It reads `state/usage.json` only, so
it runs beside the bot, without a token or a model key."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bot.app import clock
from bot.settings import Settings
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from bot.usage import Prices, UsageLedger
from bot.usage.report import render

Print = Callable[[str], None]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    usage = sub.add_parser(
        "usage", help="tokens in and out, cached share and model calls, today and this month"
    )
    usage.add_argument("--chat", metavar="KEY", help="one chat's only (e.g. telegram:42)")


def run(settings: Settings, args: argparse.Namespace, out: Print = print) -> int:
    workspace = Workspace(settings.workspace)
    now = clock(settings.timezone)
    ledger = UsageLedger(workspace.usage_path, FileLocks(workspace.locks_dir), now=now)
    prices = Prices.load(settings.usage.prices_file)
    out(render(ledger.lines(), prices, today=now().date(), chat=args.chat))
    return 0
