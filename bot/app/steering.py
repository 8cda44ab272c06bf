"""The parts a person steers with: receipts and their buttons (`bot.receipts`), and what the
model spends (`bot.usage`); the gate they share (who may talk, the door for everyone else)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.llm.client import LLM
from bot.memory.writer import MemoryWriter
from bot.models import parse_session_key
from bot.receipts import ReceiptDesk, ReceiptStore
from bot.settings import Settings
from bot.storage.files import Locks
from bot.storage.roster import RosterStore
from bot.storage.workspace import Workspace
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks
from bot.turn.door import Door
from bot.turn.notices import ToldNotices
from bot.turn.pairing import PLACEHOLDER_OWNER, Pairing, real_owners
from bot.usage import (
    Caps,
    MeteredLLM,
    MeteredTranscriber,
    OwnerLine,
    Prices,
    UsageLedger,
    UsageReport,
)
from bot.usage.metered import Limits


def build_receipts(
    settings: Settings,
    store: ReceiptStore,
    writer: MemoryWriter,
    access: AccessPolicy,
    chats: ChatLocks,
) -> ReceiptDesk:
    """The receipts' desk; with receipts off it issues none, and old receipts still work."""
    return ReceiptDesk(
        store,
        writer,
        owners=access,
        locks=chats,
        undo_minutes=settings.memory.undo_minutes,
        enabled=settings.memory.receipts,
    )


@dataclass(frozen=True)
class Gate:
    """Who may talk, the door for everyone else, and each chat's lock: built before the turn
    (receipts and spending caps use them too)."""

    access: AccessPolicy
    door: Door
    locks: ChatLocks


@dataclass(frozen=True)
class Steering:
    """What the router and the commands get of these parts, and the gate they share."""

    gate: Gate
    receipts: ReceiptDesk
    usage: UsageReport


@dataclass(frozen=True)
class Spending:
    """What the model spends: recorded, capped, reported (`bot.usage`)."""

    ledger: UsageLedger
    report: UsageReport
    line: OwnerLine  # the owners hear of caps here, once a channel connects it
    metered: MeteredLLM

    def llm(self, kind: str) -> MeteredLLM:
        """The model client for one kind of work."""
        return self.metered.as_kind(kind)

    @property
    def transcribed(self) -> MeteredTranscriber:
        return MeteredTranscriber(self.ledger)


def build_spending(
    settings: Settings,
    workspace: Workspace,
    locks: Locks,
    llm: LLM,
    access: AccessPolicy,
    now: Callable[[], datetime],
) -> Spending:
    config = settings.usage
    ledger = UsageLedger(workspace.usage_path, locks, now=now, documents=workspace.documents)
    line = OwnerLine(access.owners)
    limits = Limits(
        chat_daily_tokens=config.chat_daily_tokens,
        background_daily_tokens=config.background_daily_tokens,
        owners_exempt=config.owners_exempt,
        warn_share=config.warn_share,
    )
    caps = Caps(
        ledger, limits, owner_chat=lambda chat: _owner_chat(access, chat), line=line, now=now
    )
    report = UsageReport(ledger, Prices.load(config.prices_file), now=now)
    return Spending(ledger, report, line, MeteredLLM(llm, "reply", ledger, caps))


def _owner_chat(access: AccessPolicy, chat: str) -> bool:
    """An owner's private chat (its id is the owner's user id), or the console's."""
    parsed = parse_session_key(chat)
    return parsed is not None and parsed[2] is None and access.is_owner(parsed[1])


def build_steering(
    settings: Settings,
    workspace: Workspace,
    store: ReceiptStore,
    writer: MemoryWriter,
    llm: LLM,
    gate: Gate,
    now: Callable[[], datetime],
) -> tuple[Steering, Spending]:
    """The receipts' desk and the spending, over the gate built before the turn."""
    receipts = build_receipts(settings, store, writer, gate.access, gate.locks)
    spending = build_spending(settings, workspace, store.locks, llm, gate.access, now)
    return Steering(gate, receipts, spending.report), spending


def build_door(
    settings: Settings,
    roster: RosterStore,
    now: Callable[[], datetime],
    *,
    told: ToldNotices | None = None,
) -> tuple[AccessPolicy, Door]:
    """Who may talk (the settings and the roster), and the door for everyone else."""
    telegram = settings.telegram
    access = AccessPolicy(
        owner_ids=real_owners(telegram.owner_ids),
        allowed_user_ids=telegram.allowed_user_ids,
        roster=roster,
    )
    door = Door(
        access,
        Pairing(roster, now=now),
        now=now,
        enabled=telegram.pairing,
        placeholder=PLACEHOLDER_OWNER in telegram.owner_ids,
        told=told,
    )
    return access, door
