"""`Spending`: what the model spends, built once over the model client — the ledger, the caps
over it (told to the owners in one line), the report, and the client of each kind of work."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.llm.client import LLM
from bot.models import parse_session_key
from bot.settings import UsageSettings
from bot.storage.files import Locks
from bot.storage.workspace import Workspace
from bot.usage.ledger import UsageLedger
from bot.usage.metered import Caps, Limits, MeteredLLM, MeteredTranscriber, OwnerLine
from bot.usage.prices import Prices
from bot.usage.report import UsageReport


class Owners(Protocol):
    def owners(self) -> frozenset[int]: ...

    def is_owner(self, user_id: int) -> bool: ...


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

    @classmethod
    def from_settings(
        cls,
        config: UsageSettings,
        workspace: Workspace,
        locks: Locks,
        llm: LLM,
        owners: Owners,
        *,
        now: Callable[[], datetime],
    ) -> Spending:
        """Over the workspace's ledger, with `config`'s caps and prices."""
        limits = Limits(
            chat_daily_tokens=config.chat_daily_tokens,
            background_daily_tokens=config.background_daily_tokens,
            owners_exempt=config.owners_exempt,
            warn_share=config.warn_share,
        )

        def owner_chat(chat: str) -> bool:  # an owner's private chat (its id is the owner's)
            parsed = parse_session_key(chat)
            return parsed is not None and parsed[2] is None and owners.is_owner(parsed[1])

        return cls.over(
            llm,
            UsageLedger(workspace.usage_path, locks, now=now, documents=workspace.documents),
            limits,
            Prices.load(config.prices_file),
            owners=owners.owners,
            owner_chat=owner_chat,
            now=now,
        )

    def llm(self, kind: str) -> MeteredLLM:
        """The model client for one kind of work."""
        return self.metered.as_kind(kind)

    @property
    def transcribed(self) -> MeteredTranscriber:
        return MeteredTranscriber(self.ledger)
