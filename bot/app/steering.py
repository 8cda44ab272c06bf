"""The parts a person steers memory with: receipts and their buttons (`bot.receipts`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.memory.writer import MemoryWriter
from bot.receipts import ReceiptDesk, ReceiptStore
from bot.settings import Settings
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks


def build_receipts(
    settings: Settings,
    workspace: Workspace,
    locks: FileLocks,
    writer: MemoryWriter,
    access: AccessPolicy,
    chats: ChatLocks,
    now: Callable[[], datetime],
) -> ReceiptDesk:
    """The receipts' desk; with receipts off it issues none, and old receipts still work."""
    store = ReceiptStore(workspace.state_dir / "receipts.json", locks, now=now)
    return ReceiptDesk(
        store,
        writer,
        owners=access,
        locks=chats,
        undo_minutes=settings.memory.undo_minutes,
        enabled=settings.memory.receipts,
    )
