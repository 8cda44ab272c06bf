"""Logging: JSON lines with chat and turn, secrets redacted everywhere, stdlib routed through."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from urllib.parse import quote, quote_plus

import httpx
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


# ----------------------------------------------------------------------------- scrubbing


ODD_KEY = 'k3y/with+slash="quote"=0123456789'


@pytest.mark.parametrize(
    "spelling",
    [
        ODD_KEY,
        json.dumps(ODD_KEY)[1:-1],  # inside a JSON error body
        json.dumps(ODD_KEY)[1:-1].replace("/", "\\/"),  # … from a server that escapes "/"
        quote(ODD_KEY, safe=""),  # in a query string
        quote_plus(ODD_KEY),
        repr(ODD_KEY)[1:-1],
    ],
    ids=["raw", "json", "json-slash", "url", "url-plus", "repr"],
)
def test_a_known_secret_is_cut_in_every_spelling(spelling: str) -> None:
    scrub = logs.Scrubber([ODD_KEY])
    assert scrub(f"401: Incorrect API key provided: {spelling}.") == (
        f"401: Incorrect API key provided: {logs.REDACTED}."
    )


def test_a_bot_tokens_secret_part_is_cut_on_its_own() -> None:
    secret = TOKEN.split(":", 1)[1]
    scrubbed = logs.Scrubber([TOKEN])(f"token part {secret} and id 123456789")
    assert secret not in scrubbed and "id 123456789" in scrubbed


@pytest.mark.parametrize(
    "leak",
    [
        "sk-proj-ab******************************wxyz",  # OpenAI echoes a wrong key masked
        "sk-0therkey0123456789abcdef",  # a key we were never told about
        "987654321%3AZZHdqTcvCH1vGWJxfSeofSAs0K5PALDsZZ",  # a URL-encoded token
    ],
)
def test_key_and_token_shapes_are_cut_even_if_unknown(leak: str) -> None:
    assert logs.Scrubber([])(f"provided: {leak}.") == f"provided: {logs.REDACTED}."


def test_ordinary_text_is_left_alone() -> None:
    text = "sk-learn is **bold**; chat 123456789 at 12:30; task-runner"
    assert logs.Scrubber([API_KEY])(text) == text


def test_a_key_echoed_in_a_json_body_is_cut_from_json_lines(stream: io.StringIO) -> None:
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {ODD_KEY}"}})
    logs.configure(fmt="json", level="INFO", secrets=[ODD_KEY], stream=stream)
    structlog.get_logger("x").warning("llm_error", detail=body)
    logging.getLogger("openai").warning("retrying %s", quote(ODD_KEY, safe=""))
    text = stream.getvalue()
    assert "0123456789" not in text and "slash" not in text
    assert [line["event"] for line in lines(stream)] == ["llm_error", "retrying [REDACTED]"]


def test_console_tracebacks_are_plain_and_scrubbed() -> None:
    buffer = io.StringIO()
    logs.configure(fmt="console", level="INFO", secrets=[API_KEY], stream=buffer)
    try:
        try:
            raise ValueError(f"echoed {API_KEY!r}")
        except ValueError:
            structlog.get_logger("x").error("failed", exc_info=True)
    finally:
        logging.getLogger().handlers.clear()
        structlog.reset_defaults()
    text = buffer.getvalue()
    assert "Traceback" in text and "ValueError: echoed" in text
    assert API_KEY not in text


# ----------------------------------------------------------------------------- network errors


def connect_error() -> Exception:
    """What PTB raises when Telegram is unreachable: its own error, from httpx's."""
    try:
        try:
            raise httpx.ConnectError("All connection attempts failed")
        except httpx.ConnectError as exc:
            raise RuntimeError("httpx.ConnectError: All connection attempts failed") from exc
    except RuntimeError as exc:
        return exc


def test_a_library_network_error_is_one_line_without_traceback(stream: io.StringIO) -> None:
    error = connect_error()
    logging.getLogger("telegram.ext.Updater").error("polling failed", exc_info=error)
    [line] = lines(stream)
    assert line["event"] == "polling failed"
    assert line["error"] == "RuntimeError: httpx.ConnectError: All connection attempts failed"
    assert "exception" not in line and "Traceback" not in stream.getvalue()


def test_our_own_network_error_is_one_line_too(stream: io.StringIO) -> None:
    structlog.get_logger("x").error("update_failed", exc_info=TimeoutError("read timed out"))
    [line] = lines(stream)
    assert line["error"] == "TimeoutError: read timed out" and "exception" not in line


def test_the_caller_decides_what_else_is_transient() -> None:
    buffer = io.StringIO()
    logs.configure(
        fmt="console", level="INFO", stream=buffer, transient=lambda e: isinstance(e, KeyError)
    )
    try:
        structlog.get_logger("x").warning("flaky", exc_info=KeyError("gone"))
    finally:
        logging.getLogger().handlers.clear()
        structlog.reset_defaults()
    assert buffer.getvalue().count("\n") == 1 and "error=\"KeyError: 'gone'\"" in buffer.getvalue()


def test_any_other_error_keeps_its_traceback(stream: io.StringIO) -> None:
    try:
        raise PermissionError("workspace is read-only")  # an OSError, not a network one
    except PermissionError:
        logging.getLogger("bot.storage").exception("write failed")
    [line] = lines(stream)
    assert "Traceback" in str(line["exception"]) and "error" not in line
