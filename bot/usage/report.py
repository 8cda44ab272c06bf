"""What /usage and `python -m bot usage` print: tokens in (and the cached share) and out, model
calls and, for models with a price, dollars; today and this month, by kind, and by chat when
more than one chat is shown."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import date, datetime

from bot.usage.ledger import KINDS, Spent, UsageLedger
from bot.usage.prices import Prices

NOTHING = "No model calls recorded {where} this month."


def render(lines: Sequence[Spent], prices: Prices, *, today: date, chat: str | None) -> str:
    """The report of `chat` (None: every chat, each on a line of its own too)."""
    month = today.isoformat()[:7]
    mine = [s for s in lines if s.day.startswith(month) and (chat is None or s.chat == chat)]
    if not mine:
        return NOTHING.format(where="in this chat" if chat is not None else "anywhere")
    day = [s for s in mine if s.day == today.isoformat()]
    out = [f"Today ({today.isoformat()}): {summary(day, prices)}"]
    out += [f"  {kind}: {summary(spent, prices)}" for kind, spent in by_kind(day)]
    out.append(f"This month ({month}): {summary(mine, prices)}")
    out += [f"  {kind}: {summary(spent, prices)}" for kind, spent in by_kind(mine)]
    chats = sorted({s.chat for s in mine})
    if chat is None and chats:
        out.append("By chat, this month:")
        out += [
            f"  {c or '(no chat)'}: {summary([s for s in mine if s.chat == c], prices)}"
            for c in chats
        ]
    unpriced = sorted({s.model for s in mine if prices.of(s.model) is None})
    if unpriced:
        out.append(f"No price known for {', '.join(unpriced)}: tokens only.")
    return "\n".join(out)


def by_kind(lines: Sequence[Spent]) -> list[tuple[str, list[Spent]]]:
    found = [(kind, [s for s in lines if s.kind == kind]) for kind in KINDS]
    return [(kind, spent) for kind, spent in found if spent]


def summary(lines: Iterable[Spent], prices: Prices) -> str:
    """`1,234 in (1,024 cached, 83%) · 80 out · 2 calls · $0.0004`"""
    lines = list(lines)
    tokens_in = sum(s.tokens_in for s in lines)
    cached = sum(s.cached for s in lines)
    calls = sum(s.calls for s in lines)
    share = f", {cached / tokens_in:.0%}" if tokens_in else ""
    parts = [
        f"{tokens_in:,} in ({cached:,} cached{share})",
        f"{sum(s.tokens_out for s in lines):,} out",
        f"{calls:,} call{'' if calls == 1 else 's'}",
    ]
    costs = [
        prices.cost(s.model, tokens_in=s.tokens_in, cached=s.cached, tokens_out=s.tokens_out)
        for s in lines
    ]
    known = [c for c in costs if c is not None]
    if known:
        parts.append(f"${sum(known):.4f}" + (" and unpriced tokens" if None in costs else ""))
    return " · ".join(parts)


@dataclass(eq=False)
class UsageReport:
    """/usage: this chat's figures; an owner in their private chat sees every chat's."""

    ledger: UsageLedger
    prices: Prices
    _: KW_ONLY
    now: Callable[[], datetime]

    async def describe(self, chat: str, *, everything: bool) -> str:
        lines = await asyncio.to_thread(self.ledger.lines)
        today = self.now().date()
        return render(lines, self.prices, today=today, chat=None if everything else chat)
