"""`Spending`: what the model spends, built once over the model client — the ledger, the caps
over it (told to the owners in one line), the report, and the client of each kind of work."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from bot.llm.client import LLM
from bot.usage.ledger import UsageLedger
from bot.usage.metered import Caps, Limits, MeteredLLM, MeteredTranscriber, OwnerLine
from bot.usage.prices import Prices
from bot.usage.report import UsageReport


@dataclass(frozen=True)
class Spending:
    ledger: UsageLedger
    report: UsageReport  # /usage, `python -m bot usage`, the web page
    line: OwnerLine  # the owners hear of caps here, once a channel connects it
    metered: MeteredLLM

    @classmethod
    def over(
        cls,
        llm: LLM,
        ledger: UsageLedger,
        limits: Limits,
        prices: Prices,
        *,
        owners: Callable[[], Iterable[int]],
        owner_chat: Callable[[str], bool],  # True for an owner's private chat
        now: Callable[[], datetime],
    ) -> Spending:
        line = OwnerLine(owners)
        caps = Caps(ledger, limits, owner_chat=owner_chat, line=line, now=now)
        report = UsageReport(ledger, prices, now=now)
        return cls(ledger, report, line, MeteredLLM(llm, "reply", ledger, caps))

    def llm(self, kind: str) -> MeteredLLM:
        """The model client for one kind of work."""
        return self.metered.as_kind(kind)

    @property
    def transcribed(self) -> MeteredTranscriber:
        return MeteredTranscriber(self.ledger)
