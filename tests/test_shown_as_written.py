"""Text is shown as written: what the bot or the model writes reaches Telegram with every
character, markdown rendered but HTML-looking text kept as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.channels.markdown import plain
from bot.channels.telegram.format import render
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot

HTML_PROSE = "in HTML a <div> holds text, a <b>bold</b> word; write to <ann@x.org>"


@pytest.mark.parametrize(
    "text",
    [
        "Usage: /remember <text> — I save it",
        HTML_PROSE,
        "List<String> and Map<K, V> are generics",
        "<div>\nhello <b>x</b>\n</div>",
        "a <!-- comment --> stays",
        "x < y > z",
    ],
)
def test_html_looking_text_is_shown_as_written(text: str) -> None:
    [chunk] = render(text)

    assert chunk.text == text
    assert chunk.entities == []


def test_markdown_and_code_are_still_rendered_beside_tags() -> None:
    [chunk] = render("**bold** <x> and `<b>` in code")

    assert chunk.text == "bold <x> and <b> in code"
    assert chunk.entities == [
        {"type": "bold", "offset": 0, "length": 4},
        {"type": "code", "offset": 13, "length": 3},
    ]


def test_a_code_block_keeps_its_tags_without_escapes() -> None:
    [chunk] = render("```\n<x>\\<y>\n```")

    assert chunk.text == "<x>\\<y>"


@pytest.mark.parametrize(
    ("markdown", "text"),
    [
        ("Take **the ferry** at `9:15`, [pier 7](http://x)", "Take the ferry at 9:15, pier 7"),
        ("# Plan\n- **bread**\n- *milk*", "Plan\n• bread\n• milk"),
        ("still being written: the **impor", "still being written: the impor"),
        (HTML_PROSE, HTML_PROSE),
        ("2 * 3 = 6, snake_case stays", "2 * 3 = 6, snake_case stays"),
    ],
)
def test_plain_text_is_markdown_without_its_syntax(markdown: str, text: str) -> None:
    assert plain(markdown) == text


async def test_a_model_reply_and_the_bots_usage_lines_keep_their_tags(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(HTML_PROSE))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "explain html")
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(OWNER, OWNER, "/remember")
        await fake_telegram.wait_for_messages(OWNER, 2)
        fake_telegram.push_text(OWNER, OWNER, "/forget")
        replies = await fake_telegram.wait_for_messages(OWNER, 3)

    answer, remember, forget = (reply.text for reply in replies)
    assert answer == HTML_PROSE
    assert remember.startswith("Usage: /remember <text> — ")
    assert forget.startswith("Usage: /forget <text> (3 characters or more)")
