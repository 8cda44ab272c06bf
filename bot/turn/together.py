"""Quick follow-ups answered together: "wait", "actually", "what time is it?" sent one after
another, before the chat's turn starts, make one turn and one answer.

The chat's worker (`Intake`) waits the debounce (`BOT_TELEGRAM__DEBOUNCE`) before a chat's first
turn, then takes the queue's leading run of plain messages from one person (addressed to the
bot, not answered yet, no command, no attachment) as one message: their texts joined by line
breaks, as the last of them. The journal keeps the joined message in the last entry, naming the
others (`Inbox.merged`), so a stop at any point answers each message once. Replicated mode's
queue does the same with the chat's later entries in the shared journal
(`bot.replicas.queue.QueueIntake`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import replace

from bot.models import Inbound
from bot.storage.inbox import Entry, Journal

DEBOUNCE = 0.5  # seconds a chat's first turn waits for follow-ups (the setting's default)


def run_of(queue: Sequence[Entry]) -> list[Entry]:
    """The entries at the head of `queue` that may be answered as one (at least the first)."""
    first = queue[0]
    run = [first]
    if not may_join(first):
        return run
    for entry in list(queue)[1:]:
        if not may_join(entry) or entry.inbound.user_id != first.inbound.user_id:
            break
        run.append(entry)
    return run


async def together(queue: deque[Entry], inbox: Journal) -> Entry:
    """The head of `queue`, with the follow-ups it may take merged into it (and dropped from
    the queue)."""
    run = run_of(queue)
    if len(run) == 1:
        return queue[0]
    merged = await inbox.merged(run, joined(run))
    for _ in run:
        queue.popleft()
    queue.appendleft(merged)
    return merged


def joined(run: Sequence[Entry]) -> Inbound:
    """The one message a run of entries is answered as: their texts, one per line, as the
    last of them."""
    return replace(run[-1].inbound, text="\n".join(entry.inbound.text for entry in run))


def may_join(entry: Entry) -> bool:
    """Whether the entry may be answered together with others (a plain message)."""
    inbound = entry.inbound
    return (
        entry.reply is None
        and inbound.addressed
        and not inbound.attachments
        and not inbound.text.lstrip().startswith("/")
    )
