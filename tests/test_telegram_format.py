"""Telegram's side of a message: markdown → text + entities split under the limit, and which
group messages are for us (real `telegram.Update` objects, no network)."""

from __future__ import annotations

import pytest

from bot.channels.telegram.format import TELEGRAM_LIMIT, render, utf16_len

# ----------------------------------------------------------------------------- render


def test_bold_italic_and_code_become_entities() -> None:
    [chunk] = render("**bold** and _italic_ and `code`")

    assert chunk.text == "bold and italic and code"
    assert chunk.entities == [
        {"type": "bold", "offset": 0, "length": 4},
        {"type": "italic", "offset": 9, "length": 6},
        {"type": "code", "offset": 20, "length": 4},
    ]


def test_entity_offsets_count_utf16_units() -> None:
    [chunk] = render("😀 **bold**")

    assert chunk.entities == [{"type": "bold", "offset": 3, "length": 4}]


def test_a_10000_character_reply_is_split_under_the_limit_without_losing_text() -> None:
    reply = " ".join(f"word{i:05d}" for i in range(1000))[:10_000]

    chunks = render(reply)

    assert len(chunks) == 3
    assert all(utf16_len(c.text) <= TELEGRAM_LIMIT for c in chunks)
    assert "".join(c.text for c in chunks) == reply


def test_emoji_count_two_units_each_when_splitting() -> None:
    reply = "😀" * 5000  # 10,000 UTF-16 units in 5,000 characters

    chunks = render(reply)

    assert [utf16_len(c.text) for c in chunks] == [4096, 4096, 1808]
    assert "".join(c.text for c in chunks) == reply


def test_an_entity_across_a_split_is_cut_into_each_piece() -> None:
    chunks = render("intro **" + "b" * 5000 + "** outro")

    assert [c.text.count("b") for c in chunks] == [4090, 910]
    for chunk in chunks:
        [bold] = chunk.entities
        assert bold["type"] == "bold"
        assert bold["offset"] + bold["length"] <= utf16_len(chunk.text)
    assert sum(c.entities[0]["length"] for c in chunks) == 5000


def test_offsets_after_a_split_count_from_the_piece_in_utf16() -> None:
    chunks = render("😀" * 3000 + " **bold** " + "😀" * 3000)

    [piece] = [c for c in chunks if c.entities]
    [bold] = piece.entities
    units = piece.text.encode("utf-16-le")
    start, end = 2 * bold["offset"], 2 * (bold["offset"] + bold["length"])
    assert units[start:end].decode("utf-16-le") == "bold"


@pytest.mark.parametrize("text", ["", "   ", "\n\n \t"])
def test_empty_or_blank_input_gives_nothing_to_send(text: str) -> None:
    assert render(text) == []
