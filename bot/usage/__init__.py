"""What the model costs: every call's tokens as the provider reported them, by chat and kind,
shown by /usage and `python -m bot usage`, and capped per day.

    ledger.py   `UsageLedger`: tokens in, out and cached, and calls, per day, chat, kind and model
                in `state/usage.json` (this month and the last; atomic, locked)
    prices.py   `Prices`: what known models cost (`config/prices.json`)
    report.py   what /usage and `python -m bot usage` print
    metered.py  `MeteredLLM`, `MeteredTranscriber`: each call checked against the caps, then
                recorded; `Caps`: the daily caps, the warning at 80% and the stop, each told to
                the owners in one line (`OwnerLine`)
    spending.py `Spending`: all of it built once over the model client, and each kind of
                work's client

Kinds: reply (a turn's answers, tools included), consolidation, flush, compaction,
transcription, task (a scheduled task's turn, `bot.reminders`: capped there, not here). The
chat a call is for is the one the logs name (`chat` in structlog's context, bound by the router
and the consolidation queue); "" when none.
"""

from bot.usage.ledger import KINDS, UsageLedger
from bot.usage.metered import Caps, MeteredLLM, MeteredTranscriber, OwnerLine
from bot.usage.prices import Prices
from bot.usage.report import UsageReport
from bot.usage.spending import Spending

__all__ = [
    "KINDS",
    "Caps",
    "MeteredLLM",
    "MeteredTranscriber",
    "OwnerLine",
    "Prices",
    "Spending",
    "UsageLedger",
    "UsageReport",
]
