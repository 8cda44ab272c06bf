"""The memory page in a real browser (Debian's chromium through Playwright): signing in by the
link `/web` gives, a link that is used or expired refused, an edit of MEMORY.md that the bot's
next prompt uses, a hand edit made meanwhile kept, a receipt undone, a search hit opened, a
paired user kept out of the owner's memory by page and by crafted request, a cross-site write
refused, and a fact holding `<script>` shown as text. One bot and one browser for the module.

Screenshots of the pages go to `$MNEMO_WEB_SCREENSHOTS` when it is set (docs/web/ holds the
committed ones: `MNEMO_WEB_SCREENSHOTS=docs/web make test PYTEST_ARGS=tests/test_web_page.py`)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from playwright.async_api import Browser, Page

from bot.memory.provenance import FactOrigins
from bot.models import GLOBAL_SCOPE, Provenance
from bot.reminders.store import ReminderStore
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace, encode_key
from tests.fakes.local_server import LocalServer
from tests.fakes.openai_api import Reply
from tests.harness import API_KEY, FRIEND, OWNER
from tests.reminding import a_reminder
from tests.talk import system_text
from tests.web_browser import Bot, bot_with_page, chromium, form_token, post_from, signed_in

pytestmark = pytest.mark.asyncio(loop_scope="module")
SHOTS = os.environ.get("MNEMO_WEB_SCREENSHOTS")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def bot(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Bot]:
    async with bot_with_page(tmp_path_factory.mktemp("web") / "ws") as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as started:
        yield started


async def shot(page: Page, name: str) -> None:
    if SHOTS:
        await asyncio.to_thread(Path(SHOTS).mkdir, parents=True, exist_ok=True)
        await page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def write_memory(bot: Bot, text: str) -> None:
    bot.memory().mkdir(parents=True, exist_ok=True)
    bot.memory("MEMORY.md").write_text(text, encoding="utf-8")


async def test_a_link_from_web_signs_in_once(bot: Bot, browser: Browser) -> None:
    write_memory(bot, "# Memory\n\n## Remembered\n- Ann lives in Oslo\n")
    link = await bot.link(OWNER)
    page = await (await browser.new_context()).new_page()
    await page.goto(link)
    await page.click("#signin")
    await page.wait_for_url(f"{bot.base}/memory")
    assert "Ann lives in Oslo" in await page.inner_text("main")

    other = await (await browser.new_context()).new_page()  # the same link again
    await other.goto(link)
    await other.click("#signin")
    assert "used already or has expired" in await other.inner_text("main")
    assert "Ann lives in Oslo" not in await other.content()


async def test_an_expired_link_and_a_signed_out_session_are_refused(
    bot: Bot, browser: Browser
) -> None:
    link = await bot.link(OWNER)
    bot.clock.ahead = timedelta(minutes=11)  # links work for 10 minutes
    try:
        page = await (await browser.new_context()).new_page()
        await page.goto(link)
        await page.click("#signin")
        assert "used already or has expired" in await page.inner_text("main")
    finally:
        bot.clock.ahead = timedelta(0)
    page = await signed_in(browser, bot, OWNER)
    await page.click("text=Sign out")
    await page.goto(f"{bot.base}/memory")
    assert page.url == f"{bot.base}/signin"
    assert "token" not in (bot.workspace / "state" / "web.json").read_text()


async def test_an_edit_in_the_page_is_in_the_next_prompt(bot: Bot, browser: Browser) -> None:
    write_memory(bot, "# Memory\n\n## Remembered\n- Ann lives in Oslo\n")
    page = await signed_in(browser, bot, OWNER)
    await page.click("text=Edit the file")
    text = await page.input_value("#memory-text")
    await page.fill("#memory-text", text + "- Ann's dentist is Dr Lee\n")
    await page.click("#save")
    await page.wait_for_selector("text=Saved")
    assert "- Ann's dentist is Dr Lee" in bot.memory("MEMORY.md").read_text()

    bot.model.script(Reply("Noted."))
    sent = len(bot.telegram.sent_messages(OWNER))
    bot.telegram.push_text(OWNER, OWNER, "who is my dentist?")
    await bot.telegram.wait_for_messages(OWNER, sent + 1)
    assert "Ann's dentist is Dr Lee" in system_text(bot.model.requests[-1])


async def test_a_hand_edit_made_while_the_page_was_open_is_kept(bot: Bot, browser: Browser) -> None:
    write_memory(bot, "# Memory\n\n## Remembered\n- Ann lives in Oslo\n- Tea, no sugar\n")
    page = await signed_in(browser, bot, OWNER)
    await page.click("text=Edit the file")
    path = bot.memory("MEMORY.md")
    path.write_text(path.read_text() + "- Bo's birthday is 4 May\n")  # in an editor, meanwhile
    text = await page.input_value("#memory-text")
    await page.fill("#memory-text", text.replace("Tea, no sugar", "Tea with milk"))
    await page.click("#save")
    await page.wait_for_selector(".notice")
    now = path.read_text()
    assert "- Bo's birthday is 4 May" in now
    assert "- Tea with milk" in now


async def test_undo_on_a_receipt_takes_the_fact_out(bot: Bot, browser: Browser) -> None:
    bot.model.script(Reply("Got it.<memory>Ann plays the cello</memory>"))
    sent = len(bot.telegram.sent_messages(OWNER))
    bot.telegram.push_text(OWNER, OWNER, "I play the cello, keep that in mind")
    await bot.telegram.wait_for_messages(OWNER, sent + 2)  # the reply and its receipt
    assert "- Ann plays the cello" in bot.memory("MEMORY.md").read_text()
    page = await signed_in(browser, bot, OWNER)
    await page.goto(f"{bot.base}/learned")
    receipt = page.locator(".receipt", has_text="Ann plays the cello")
    await receipt.get_by_role("button", name="Undo").click()
    await page.wait_for_selector("text=Undone")
    assert "Ann plays the cello" not in bot.memory("MEMORY.md").read_text()


async def test_a_search_hit_opens_its_source(bot: Bot, browser: Browser) -> None:
    write_memory(bot, "# Memory\n\n## Remembered\n- Ann lives in Oslo\n- The boat is blue\n")
    if bot.app.items_index is not None:
        await bot.app.items_index.index.sync()
    page = await signed_in(browser, bot, OWNER)
    await page.goto(f"{bot.base}/search?q=boat")
    hit = page.locator(".hit", has_text="The boat is blue").first
    await hit.locator(".cite a").click()
    await page.wait_for_url("**/source?**")
    marked = "\n".join(await page.locator("tr.hit").all_inner_texts())
    assert "The boat is blue" in marked
    assert "MEMORY.md" in await page.inner_text("h1")


async def test_a_paired_user_sees_only_their_own_chat_memory(bot: Bot, browser: Browser) -> None:
    write_memory(bot, "# Memory\n\n## Remembered\n- The owner's secret is 1234\n")
    chat = bot.memory("chats", f"telegram%3A{FRIEND}")
    chat.mkdir(parents=True, exist_ok=True)
    (chat / "MEMORY.md").write_text("# Memory\n- Bo likes chess\n", encoding="utf-8")
    page = await signed_in(browser, bot, FRIEND)
    assert "Bo likes chess" in await page.inner_text("main")
    assert "secret" not in await page.content()

    refused = await page.goto(f"{bot.base}/memory?scope=global")
    assert refused is not None and refused.status == 403
    assert "secret" not in await page.content()
    await page.goto(f"{bot.base}/memory")
    token = await form_token(page)
    form = {"csrf": token, "scope": "global", "digest": "", "base": "", "text": "- planted\n"}
    status, text = await post_from(page, bot, "/memory/edit", form)
    assert status == 403, text
    await page.goto(f"{bot.base}/search?q=secret")
    assert "1234" not in await page.content()
    other = await page.goto(f"{bot.base}/conversation?key=telegram%3A{OWNER}")
    assert other is not None and other.status == 403
    assert "planted" not in bot.memory("MEMORY.md").read_text()
    assert "secret is 1234" in bot.memory("MEMORY.md").read_text()


class Elsewhere(LocalServer):
    """Another site on this machine, whose page posts a form to the memory page."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self._page)
        return app

    async def _page(self, request: web.Request) -> web.Response:
        form = (
            f'<form method="post" action="{self.target}/memory/edit">'
            '<input name="scope" value="global"><input name="text" value="- planted">'
            '<button id="go" type="submit">go</button></form>'
        )
        return web.Response(text=form, content_type="text/html")


async def test_a_cross_site_write_is_refused(bot: Bot, browser: Browser) -> None:
    write_memory(bot, "# Memory\n- Ann lives in Oslo\n")
    page = await signed_in(browser, bot, OWNER)
    async with Elsewhere(bot.base) as other:
        await page.goto(f"http://127.0.0.1:{other.port}/")
        await page.click("#go")
        await page.wait_for_load_state()
        assert "Refused" in await page.inner_text("body") or "signed out" in await page.content()
    await page.goto(f"{bot.base}/memory")
    cookies = {c["name"]: c["value"] for c in await page.context.cookies()}
    token = await form_token(page)
    form = {"csrf": token, "scope": "global", "digest": "", "base": "", "text": "- planted\n"}
    evil = {"Origin": "http://evil.example"}
    async with (
        aiohttp.ClientSession(cookies=cookies) as client,  # the cookie, from another origin
        client.post(f"{bot.base}/memory/edit", data=form, headers=evil) as answer,
    ):
        assert answer.status == 403
    status, _ = await post_from(page, bot, "/memory/edit", {**form, "csrf": "0" * 64})
    assert status == 403
    assert "planted" not in bot.memory("MEMORY.md").read_text()


async def test_a_fact_holding_a_script_is_shown_as_text(bot: Bot, browser: Browser) -> None:
    hostile = "<script>window.pwned = 1</script><b>bold</b> <img src=x onerror=alert(1)>"
    write_memory(bot, f"# Memory\n- {hostile}\n")
    named = bot.memory("chats", encode_key("<b>a chat</b>"))
    named.mkdir(parents=True, exist_ok=True)
    (named / "MEMORY.md").write_text("- fine\n")
    page = await signed_in(browser, bot, OWNER)
    assert "<b>a chat</b>'s memory" in await page.inner_text("nav.scopes")
    fact = page.locator(".fact .text").first
    assert await fact.inner_text() == hostile
    assert await fact.locator("b, script, img").count() == 0
    assert await page.evaluate("typeof window.pwned") == "undefined"

    bot.model.script(Reply("<i>fine</i>"))
    sent = len(bot.telegram.sent_messages(OWNER))
    bot.telegram.push_text(OWNER, OWNER, hostile)
    await bot.telegram.wait_for_messages(OWNER, sent + 1)
    await page.goto(f"{bot.base}/conversation?key=telegram%3A{OWNER}")
    said = page.locator(".message.user .text", has_text="window.pwned").last
    assert await said.inner_text() == hostile
    assert await page.locator(".message b, .message i, .message img, main script").count() == 0
    assert await page.evaluate("typeof window.pwned") == "undefined"


async def test_bad_input_is_told_and_loses_nothing(bot: Bot, browser: Browser) -> None:
    bot.memory("MEMORY.md").write_bytes("# Memory\n- Café at nine\n".encode("latin-1"))
    page = await signed_in(browser, bot, OWNER)
    await page.click("text=Edit the file")
    await page.fill("#memory-text", "- my careful edit\n")
    await page.click("#save")
    assert "not UTF-8" in await page.inner_text(".notice.error")
    assert await page.input_value("#memory-text") == "- my careful edit\n"
    assert bot.memory("MEMORY.md").read_bytes() == "# Memory\n- Café at nine\n".encode("latin-1")

    store = ReminderStore(Workspace(bot.workspace), FileLocks(Workspace(bot.workspace).locks_dir))
    await store.add(GLOBAL_SCOPE, a_reminder(bot.clock(), when="in 3 days", text="call the bank"))
    await page.goto(f"{bot.base}/reminders")
    when = page.locator(".reminder", has_text="call the bank").locator("input[name=when]")
    await when.fill("when pigs fly")
    await when.press("Enter")
    await page.wait_for_selector(".notice.error")
    kept = page.locator(".reminder", has_text="call the bank").locator("input[name=when]")
    assert await kept.input_value() == "when pigs fly"
    await kept.fill("2030-01-02 09:00")
    await kept.press("Enter")
    await page.wait_for_selector("text=Moved [r1]")
    [(_, moved)] = await store.everything()
    assert moved.next_at is not None and moved.next_at.year == 2030

    for path in ("../../etc/passwd", "/etc/passwd", f"chats/telegram%3A{FRIEND}/MEMORY.md"):
        answer = await page.goto(f"{bot.base}/source?path={quote(path)}")
        assert answer is not None and answer.status == 403, path


SCENE = """# Memory

## About Ann
- Ann lives in Lyon _(was, until 2026-11-20)_
- Ann lives in Bergen
- Ann's dentist is Dr Lee
- Prefers tea with milk, no sugar

## Remembered
- Bo's birthday is on 4 May
"""


def seed_usage(bot: Bot) -> None:
    """Three weeks of the ledger (`bot.usage.ledger`'s document) for the owner and a group."""
    today = bot.clock().date()
    days = {
        (today - timedelta(days=back)).isoformat(): {
            chat: {
                kind: {"gpt-4o-mini": {"in": 900 * (back % 4 + 1), "out": 80, "cached": 300,
                                       "calls": 2}}
                for kind in ("reply", "consolidation")
            }
            for chat in (f"telegram:{OWNER}", "telegram:-500")
        }
        for back in range(1, 21)
    }  # fmt: skip
    path = bot.workspace / "state" / "usage.json"
    path.write_text(json.dumps({"version": 1, "days": days}), encoding="utf-8")


async def test_every_page_answers(bot: Bot, browser: Browser) -> None:
    write_memory(bot, SCENE)
    said = Provenance(by="Ann (1001)", chat=f"telegram:{OWNER}", at=bot.clock(), via="voice")
    FactOrigins(bot.memory("MEMORY.md")).add(
        ["Ann lives in Bergen", "Ann's dentist is Dr Lee"], said
    )
    tags = "<memory>The boat is moored at pier 4</memory><memory>Ann's sister is Kari</memory>"
    bot.model.script(Reply(f"Noted both.{tags}"))
    sent = len(bot.telegram.sent_messages(OWNER))
    bot.telegram.push_text(OWNER, OWNER, "the boat is at pier 4 now, and my sister is Kari")
    await bot.telegram.wait_for_messages(OWNER, sent + 3)  # the reply, two receipts
    if bot.app.items_index is not None:
        await bot.app.items_index.index.sync()
    page = await signed_in(browser, bot, OWNER)
    assert "superseded: Ann lives in Lyon (until 2026-11-20)" in await page.inner_text("main")
    assert "Ann (1001) · said by voice" in await page.inner_text("main")
    await shot(page, "memory")
    boat = page.locator(".fact", has_text="The boat is moored at pier 4")
    await boat.get_by_role("link", name="the message").click()
    await page.wait_for_url("**/conversation?**")
    assert "the boat is at pier 4 now" in await page.inner_text(".message.user.hit")
    pages = ("learned", f"conversation?key=telegram%3A{OWNER}", "conversations", "reminders")
    seed_usage(bot)
    for name in (*pages, "search?q=dentist", "usage?by=chat", "usage?by=model", "usage", "health"):
        answer = await page.goto(f"{bot.base}/{name}")
        assert answer is not None and answer.status == 200, name
        await shot(page, name.split("?")[0])
    await page.goto(f"{bot.base}/usage")
    assert "$" in await page.inner_text("table.figures")  # a priced model's dollars
    assert await page.locator("svg rect").count() >= 20
    await page.goto(f"{bot.base}/health")
    bot.model.script(Reply("ok"))  # doctor asks the model a short question
    bot.model.transcribe("hello")
    await page.click("#run-checks")
    checks = await page.inner_text("table.checks")
    assert "ok\tworkspace" in checks and "ok\tmodel" in checks
    assert API_KEY not in await page.content()
    await shot(page, "health")
