"""Usage: what the model cost, from the ledger `/usage` reads (`bot.usage`, which keeps this
month and last): tokens a day as a chart by kind of work, each month's total, then by day, chat
and model with dollars where a price is known (`usage.report.summary`), what background work
cost, and the caps with today's use. An owner sees every chat's; anyone else their own chat's,
as /usage in their chat."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import date, datetime, timedelta

from aiohttp import web

from bot.usage import UsageLedger, UsageReport
from bot.usage.ledger import BACKGROUND, KINDS, Spent
from bot.usage.prices import Prices
from bot.usage.report import summary
from bot.web.chart import stacked
from bot.web.site import Site, viewer
from bot.web.viewer import Viewer

BY: dict[str, Callable[[Spent], str]] = {
    "kind": lambda s: s.kind,
    "chat": lambda s: s.chat or "(no chat)",
    "model": lambda s: s.model,
}


@dataclass(frozen=True)
class Caps:
    chat_daily_tokens: int  # 0: none
    background_daily_tokens: int
    owners_exempt: bool


@dataclass(eq=False)
class UsagePage:
    site: Site
    ledger: UsageLedger
    report: UsageReport
    caps: Caps
    _: KW_ONLY
    now: Callable[[], datetime]

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/usage", self.show)]

    async def show(self, request: web.Request) -> web.Response:
        who = viewer(request)
        today = self.now().date()
        days = _days(today)
        lines = await asyncio.to_thread(self.ledger.lines)
        mine = [s for s in lines if s.day >= days[0] and _theirs(who, s)]
        by = request.query.get("by", "kind")
        key = BY.get(by, BY["kind"])
        keys = _keys(mine, key, kind_order=by not in BY or by == "kind")
        per_day = {day: _summed([s for s in mine if s.day == day], key) for day in days}
        prices = self.report.prices
        return self.site.render(
            request,
            "usage.html",
            since=days[0],
            months=_grouped(mine, lambda s: s.day[:7], prices, newest=True),
            chart=stacked(days, per_day, keys),
            keys=keys,
            by=by if by in BY else "kind",
            total=summary(mine, prices) if mine else "",
            by_day=_grouped(mine, lambda s: s.day, prices, newest=True),
            by_chat=_grouped(mine, BY["chat"], prices),
            by_model=_grouped(mine, BY["model"], prices),
            background=_grouped([s for s in mine if s.kind in BACKGROUND], BY["kind"], prices),
            caps=self.caps,
            background_today=_background(mine, today),
            unpriced=sorted({s.model for s in mine if prices.of(s.model) is None}),
        )


def _theirs(who: Viewer, spent: Spent) -> bool:
    """A chat's figures for whoever sees that chat; work of no chat for owners only."""
    return who.sees_chat(spent.chat) if spent.chat else who.owner


def _days(today: date) -> list[str]:
    """Every day from the first of last month (what the ledger keeps) to today."""
    first = (today.replace(day=1) - timedelta(days=1)).replace(day=1)
    return [(first + timedelta(days=n)).isoformat() for n in range((today - first).days + 1)]


def _keys(lines: Sequence[Spent], key: Callable[[Spent], str], *, kind_order: bool) -> list[str]:
    """The chart's keys: the kinds in their order, or the chats or models by tokens."""
    if kind_order:
        return [k for k in KINDS if any(s.kind == k for s in lines)]
    totals = _summed(lines, key)
    return sorted(totals, key=lambda name: -totals[name])


def _summed(lines: Sequence[Spent], key: Callable[[Spent], str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for spent in lines:
        found[key(spent)] = found.get(key(spent), 0) + spent.tokens
    return found


def _grouped(
    lines: Sequence[Spent],
    key: Callable[[Spent], str],
    prices: Prices,
    *,
    newest: bool = False,
) -> list[tuple[str, str]]:
    names = sorted({key(s) for s in lines}, reverse=newest)
    return [(name, summary([s for s in lines if key(s) == name], prices)) for name in names]


def _background(lines: Sequence[Spent], today: date) -> int:
    day = today.isoformat()
    return sum(s.tokens for s in lines if s.day == day and s.kind in BACKGROUND)
