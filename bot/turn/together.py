"""Quick follow-ups answered together: "wait", "actually", "what time is it?" sent one after
another, before the chat's turn starts, make one turn and one answer.

The chat's worker (`Intake`) waits the debounce (`BOT_TELEGRAM__DEBOUNCE`) before a chat's first
turn, then takes the queue's leading run of plain messages from one person (addressed to the
bot, not answered yet, no command, no attachment) as one message: their texts joined by line
breaks, as the last of them (`Inbound.joins` says how many: the daily note keeps each one's
words, `NoteFormat`). The journal keeps the joined message in the last entry, naming the
others (`Inbox.merged`), so a stop at any point answers each message once. The first entry a
stop left in a chat is answered on its own: its answer may be in the session already (saved
just before the stop), and merged with the next one it would be asked of the model again.
Replicated mode's queue does the same with the chat's later entries in the shared journal
(`bot.replicas.journal.with_follow_ups`; there an entry taken before is the one answered alone).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace

from bot.models import Inbound
from bot.storage.inbox import Entry, Journal

DEBOUNCE = 0.5  # seconds a chat's first turn waits for follow-ups (the setting's default)


def run_of(queue: Sequence[Entry], *, alone: AbstractSet[str] = frozenset()) -> list[Entry]:
    """The entries at the head of `queue` that may be answered as one (at least the first);
    an entry in `alone` (one a stop left: its answer may be saved already) never joins."""
    first = queue[0]
    run = [first]
    if not may_join(first) or first.inbound.id in alone:
        return run
    for entry in list(queue)[1:]:
        if not may_join(entry) or entry.inbound.user_id != first.inbound.user_id:
            break
        if entry.inbound.id in alone:
            break
        run.append(entry)
    return run


async def together(
    queue: deque[Entry], inbox: Journal, *, alone: AbstractSet[str] = frozenset()
) -> Entry:
    """The head of `queue`, with the follow-ups it may take merged into it (and dropped from
    the queue)."""
    run = run_of(queue, alone=alone)
    if len(run) == 1:
        return queue[0]
    merged = await inbox.merged(run, joined(run))
    for _ in run:
        queue.popleft()
    queue.appendleft(merged)
    return merged


def joined(run: Sequence[Entry]) -> Inbound:
    """The one message a run of entries is answered as: their texts, one per line, as the
    last of them, counting the messages it joins (`Inbound.joins`)."""
    text = "\n".join(entry.inbound.text for entry in run)
    joins = sum(entry.inbound.joins for entry in run)
    return replace(run[-1].inbound, text=text, joins=joins)


def may_join(entry: Entry) -> bool:
    """Whether the entry may be answered together with others (a plain message)."""
    inbound = entry.inbound
    return (
        entry.reply is None
        and inbound.addressed
        and not inbound.attachments
        and not inbound.text.lstrip().startswith("/")
    )
