"""What /forget and /undo answer: how much went, per place, a few of the lines, how to undo."""

from __future__ import annotations

from textwrap import shorten

from bot.memory.forgetting.forget import CHATTER, Forgotten, Undone

PLACES = (
    "MEMORY.md",
    "chat memory",
    "quoted material",
    "working memory",
    "daily notes",
    "archived notes",
    "history",
    "items",
    "documents' text",
    "reminders",
    "this conversation",
    "past conversations",
    "pending consolidation",
    CHATTER,
)
MESSAGES = frozenset({"this conversation", "past conversations", "pending consolidation"})
RECEIPT_LINES = 30
RECEIPT_CHARS = 200


def forget_receipt(needle: str, forgotten: Forgotten, *, undo_minutes: int) -> str:
    """What a forget removed: how much, per place; each line with its file (at most
    `RECEIPT_LINES`); files left alone; how to undo it."""
    if not forgotten.total:
        lines = [f"Nothing in this chat's memory contains “{needle}”."]
    else:
        places = ", ".join(f"{p} {n}" for p, n in _in_order(forgotten.counts))
        lines = [f"Forgot {_amount(forgotten)} containing “{needle}” ({places}):"]
        shown = forgotten.samples[:RECEIPT_LINES]
        lines += [
            f"{file}: {shorten(text, RECEIPT_CHARS, placeholder=' …')}" for file, text in shown
        ]
        if len(forgotten.samples) > RECEIPT_LINES:
            lines.append(f"… and {len(forgotten.samples) - RECEIPT_LINES} more")
    if forgotten.skipped:
        lines.append(f"Left alone (not text): {', '.join(forgotten.skipped)}")
    if forgotten.total:
        lines.append(f"/undo within {undo_minutes} minutes puts it back; after that it is gone.")
    return "\n".join(lines)


def _in_order(counts: dict[str, int]) -> list[tuple[str, int]]:
    """The places in `PLACES`' order; one it does not name comes last, never left out."""
    rank = {place: n for n, place in enumerate(PLACES)}
    return sorted(counts.items(), key=lambda pair: rank.get(pair[0], len(PLACES)))


def _short(text: str) -> str:
    return shorten(text, RECEIPT_CHARS, placeholder=" …")


def _amount(forgotten: Forgotten) -> str:
    messages = sum(n for place, n in forgotten.counts.items() if place in MESSAGES)
    lines = forgotten.total - messages
    parts = [_plural(lines, "line")] if lines else []
    parts += [_plural(messages, "message")] if messages else []
    return " and ".join(parts)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def undo_receipt(undone: Undone | None, *, expired: bool, undo_minutes: int) -> str:
    if undone is None:
        if expired:
            return f"Too late to undo: a /forget can be undone for {undo_minutes} minutes."
        return "Nothing to undo."
    lines = [f"Put back what the last /forget removed ({undone.restored} files)."]
    if undone.changed:
        changed = ", ".join(undone.changed)
        lines.append(f"Changed since, so the lines went back at their end: {changed}")
    if undone.missing:
        lines.append(f"Gone since, not restored: {', '.join(undone.missing)}")
    return "\n".join(lines)
