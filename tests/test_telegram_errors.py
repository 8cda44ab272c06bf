"""PTB's errors as what the bot says: a `StartupError` line when Telegram cannot be used (never
the token PTB quotes), None for anything else, so a bug keeps its traceback."""

from __future__ import annotations

import pytest
from telegram.error import BadRequest, Conflict, InvalidToken, NetworkError, TimedOut

from bot.channels.telegram.errors import TOKEN_REJECTED, is_network_error, startup_error
from bot.errors import StartupError

URL = "https://api.telegram.org/bot"
TOKEN = "123456:revoked-Secret-42"


def message(exc: BaseException) -> str | None:
    error = startup_error(exc, base_url=URL)
    return None if error is None else str(error)


def test_a_rejected_token_never_quotes_it() -> None:
    assert message(InvalidToken(f"The token `{TOKEN}` was rejected by the server.")) == (
        TOKEN_REJECTED
    )


def test_unreachable_and_slow_telegram_name_the_base_url() -> None:
    assert message(NetworkError("httpx.ConnectError: All connection attempts failed")) == (
        f"cannot reach Telegram at {URL} (ConnectError: All connection attempts failed): "
        "check the network and BOT_TELEGRAM__BASE_URL"
    )
    assert message(TimedOut()) == (
        f"Telegram did not answer in time at {URL}: check the network and BOT_TELEGRAM__BASE_URL"
    )


def test_another_poller_is_named() -> None:
    text = message(Conflict("Conflict: terminated by other getUpdates request"))
    assert text is not None and text.startswith("Telegram refused to deliver updates")


def test_a_startup_error_passes_through() -> None:
    error = StartupError("already one line")
    assert startup_error(error, base_url=URL) is error


@pytest.mark.parametrize(
    "exc", [RuntimeError("a bug"), BadRequest("Chat not found"), ValueError("x")]
)
def test_anything_else_is_left_alone(exc: Exception) -> None:
    assert startup_error(exc, base_url=URL) is None


def test_network_errors_but_not_bad_requests_are_network_errors() -> None:
    assert is_network_error(TimedOut()) and is_network_error(NetworkError("Bad Gateway"))
    assert not is_network_error(BadRequest("Chat not found"))
    assert not is_network_error(RuntimeError("x"))
