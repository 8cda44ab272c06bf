"""The memory page's browser tests' shell: Debian's chromium (`/usr/bin/chromium`, installed by
`.ci/run` where missing) driven by Playwright for Python — no browser download — and the whole
bot (fake Telegram, fake model) with its page on a free port of 127.0.0.1, one of each per test
module. Each test gets a fresh browser context (no cookies); Playwright starts the browser with
a new empty profile of its own (the `--user-data-dir` it passes), headless."""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

from playwright.async_api import Browser, Page, async_playwright

from bot.app import App
from bot.cli.doctor import findings
from bot.settings import MemorySettings, WebSettings
from bot.web.server import WebServer
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import make_settings, running_bot

CHROMIUM = "/usr/bin/chromium"
# what is known to work on these machines (no background connections: the network is closed)
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/signin\?token=[0-9a-f]+)")


class Shifted:
    """The bot's clock: now, moved on by `ahead` (a link's expiry without waiting)."""

    def __init__(self) -> None:
        self.ahead = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead


@dataclass
class Bot:
    app: App
    telegram: FakeTelegram
    model: FakeOpenAI
    workspace: Path
    clock: Shifted

    @property
    def server(self) -> WebServer:
        return next(s for s in self.app.services if isinstance(s, WebServer))

    @property
    def base(self) -> str:
        return self.server.base_url

    def memory(self, *parts: str) -> Path:
        return self.workspace.joinpath("memory", *parts)

    async def link(self, user: int) -> str:
        """What `/web` answers `user` in their private chat: the link in it."""
        before = len(self.telegram.sent_messages(user))
        self.telegram.push_text(user, user, "/web")
        sent = await self.telegram.wait_for_messages(user, before + 1)
        found = LINK.search(sent[-1].text)
        assert found, sent[-1].text
        return found[1]


@asynccontextmanager
async def bot_with_page(workspace: Path) -> AsyncIterator[Bot]:
    """The whole bot, its memory page on, receipts on."""
    clock = Shifted()
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        settings = make_settings(
            workspace,
            telegram=telegram,
            openai=model,
            memory=MemorySettings(receipts=True),
            web=WebSettings(enabled=True, port=0),
        )
        checks = partial(findings, settings)
        async with running_bot(settings, telegram, now=clock, checks=checks) as app:
            yield Bot(app, telegram, model, workspace, clock)
        model.assert_done()


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        raise RuntimeError(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=ARGS
        )
        try:
            yield browser
        finally:
            await browser.close()


async def signed_in(browser: Browser, bot: Bot, user: int) -> Page:
    """A fresh browser context signed in by the link `/web` gave `user`."""
    page = await (await browser.new_context(viewport={"width": 1100, "height": 900})).new_page()
    await page.goto(await bot.link(user))
    await page.click("#signin")
    await page.wait_for_url(f"{bot.base}/memory")
    return page


async def post_from(page: Page, bot: Bot, path: str, form: dict[str, str]) -> tuple[int, str]:
    """A crafted form POSTed with the page's cookie and its own origin (a script of the page
    could not: the CSP allows it no fetch): the status and the text answered."""
    answer = await page.context.request.post(
        f"{bot.base}{path}",
        form=dict[str, str | float | bool](form),
        headers={"Origin": bot.base},
        max_redirects=0,
    )
    return answer.status, await answer.text()


async def form_token(page: Page) -> str:
    return await page.get_attribute("input[name=csrf]", "value") or ""
