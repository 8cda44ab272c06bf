"""Logging: JSON lines with chat and turn, secrets redacted everywhere, stdlib routed through."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from bot import logs

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
API_KEY = "sk-live-abcdefghijklmnop"


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    logs.configure(fmt="json", level="INFO", secrets=[TOKEN, API_KEY], stream=buffer)
    yield buffer
    logging.getLogger().handlers.clear()
    structlog.reset_defaults()


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_lines_carry_bound_chat_and_turn(stream: io.StringIO) -> None:
    with structlog.contextvars.bound_contextvars(chat="telegram:1", turn="t1"):
        structlog.get_logger("x").info("turn_start", chars=3)
    [line] = lines(stream)
    assert line["event"] == "turn_start"
    assert line["chat"] == "telegram:1" and line["turn"] == "t1"


def test_secrets_are_redacted_from_library_logs_and_tracebacks(stream: io.StringIO) -> None:
    logging.getLogger("telegram.ext").warning("POST https://api.telegram.org/bot%s/getMe", TOKEN)
    try:
        raise RuntimeError(f"auth failed with {API_KEY}")
    except RuntimeError:
        structlog.get_logger("x").error("failed", exc_info=True)
    text = stream.getvalue()
    assert TOKEN not in text and API_KEY not in text
    assert TOKEN.split(":")[1] not in text
    assert text.count(logs.REDACTED) >= 2


def test_token_shaped_strings_are_redacted_even_if_unknown(stream: io.StringIO) -> None:
    other = "987654321:ZZHdqTcvCH1vGWJxfSeofSAs0K5PALDsZZ"
    structlog.get_logger("x").info("url", url=f"https://api.telegram.org/bot{other}/x")
    assert other not in stream.getvalue()


def test_httpx_request_lines_are_quiet(stream: io.StringIO) -> None:
    logging.getLogger("httpx").info("HTTP Request: POST https://x/bot%s/getUpdates", TOKEN)
    assert stream.getvalue() == ""
