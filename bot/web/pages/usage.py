"""Usage: what the model cost, from the ledger `/usage` reads (`bot.usage`, which keeps this
month and last): tokens a day as a chart by kind of work, each month's total, then by day, chat
and model with dollars where a price is known (`usage.report.summary`), what background work
cost, and the caps with today's use. An owner sees every chat's; anyone else their own chat's,
as /usage in their chat."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from aiohttp import web

from bot.usage import UsageLedger, UsageReport
from bot.usage.ledger import BACKGROUND, KINDS, Spent
from bot.usage.prices import Prices
from bot.usage.report import summary
from bot.web.chart import stacked
from bot.web.site import Site, viewer


@dataclass(frozen=True)
class Caps:
    chat_daily_tokens: int  # 0: none
    background_daily_tokens: int
    owners_exempt: bool


class UsagePage:
    def __init__(
        self,
        site: Site,
        ledger: UsageLedger,
        report: UsageReport,
        caps: Caps,
        *,
        now: Callable[[], datetime],
    ) -> None:
        self.site = site
        self.ledger = ledger
        self.report = report
        self.caps = caps
        self.now = now

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/usage", self.show)]

    async def show(self, request: web.Request) -> web.Response:
        who = viewer(request)
        today = self.now().date()
        days = _days(today)
        lines = await asyncio.to_thread(self.ledger.lines)
        mine = [s for s in lines if s.day >= days[0] and who.sees_chat(s.chat or who.chat)]
        per_day = {day: _by_kind([s for s in mine if s.day == day]) for day in days}
        prices = self.report.prices
        return self.site.render(
            request,
            "usage.html",
            since=days[0],
            months=_grouped(mine, lambda s: s.day[:7], prices, newest=True),
            chart=stacked(days, per_day, KINDS),
            kinds=[k for k in KINDS if any(s.kind == k for s in mine)],
            total=summary(mine, prices) if mine else "",
            by_day=_grouped(mine, lambda s: s.day, prices, newest=True),
            by_chat=_grouped(mine, lambda s: s.chat or "(no chat)", prices),
            by_model=_grouped(mine, lambda s: s.model, prices),
            background=_grouped([s for s in mine if s.kind in BACKGROUND], _kind, prices),
            caps=self.caps,
            background_today=_background(mine, today),
            unpriced=sorted({s.model for s in mine if prices.of(s.model) is None}),
        )


def _days(today: date) -> list[str]:
    """Every day from the first of last month (what the ledger keeps) to today."""
    first = (today.replace(day=1) - timedelta(days=1)).replace(day=1)
    return [(first + timedelta(days=n)).isoformat() for n in range((today - first).days + 1)]


def _by_kind(lines: Sequence[Spent]) -> dict[str, int]:
    found: dict[str, int] = {}
    for spent in lines:
        found[spent.kind] = found.get(spent.kind, 0) + spent.tokens
    return found


def _background(lines: Sequence[Spent], today: date) -> int:
    day = today.isoformat()
    return sum(s.tokens for s in lines if s.day == day and s.kind in BACKGROUND)


def _kind(spent: Spent) -> str:
    return spent.kind


def _grouped(
    lines: Sequence[Spent],
    key: Callable[[Spent], str],
    prices: Prices,
    *,
    newest: bool = False,
) -> list[tuple[str, str]]:
    names = sorted({key(s) for s in lines}, reverse=newest)
    return [(name, summary([s for s in lines if key(s) == name], prices)) for name in names]
