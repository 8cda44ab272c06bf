"""What python-telegram-bot's errors mean for the bot: a `StartupError` that says what to fix,
which errors are network trouble (logged in one line, see `bot.logs`), and which refusal is of
a message's entities (`is_unparsed`: replies and drafts send it again as plain text).

The command line and the channel (`polling.py`: at start, and a token rejected mid-run) share
this one translation; it imports PTB's error classes only. No message carries the token: PTB's own
`InvalidToken` text quotes it in full, so it is never passed on.
"""

from __future__ import annotations

from telegram.error import BadRequest, Conflict, InvalidToken, NetworkError, TimedOut

from bot.errors import StartupError, TokenRejected

TOKEN_REJECTED = (
    "Telegram rejected the bot token: get a new one from @BotFather, then run make setup"
)


def startup_error(exc: BaseException, *, base_url: str) -> StartupError | None:
    """The one line to stop with when `exc` means the bot cannot start or go on; None for an
    error that is not about reaching Telegram (a bug keeps its traceback)."""
    if isinstance(exc, StartupError):
        return exc
    if isinstance(exc, InvalidToken):
        return TokenRejected(TOKEN_REJECTED)
    if isinstance(exc, Conflict):
        return StartupError(
            f"Telegram refused to deliver updates ({exc.message}): stop the other bot polling "
            "with this token, or delete its webhook"
        )
    if isinstance(exc, TimedOut):
        return StartupError(
            f"Telegram did not answer in time at {base_url}: check the network and "
            "BOT_TELEGRAM__BASE_URL"
        )
    if is_network_error(exc):
        return StartupError(
            f"cannot reach Telegram at {base_url} ({_reason(exc)}): check the network and "
            "BOT_TELEGRAM__BASE_URL"
        )
    return None


def is_rejected_token(exc: BaseException) -> bool:
    """Telegram refused the token (revoked, or never valid): only a person can fix that."""
    return isinstance(exc, InvalidToken | TokenRejected)


def is_unparsed(exc: BadRequest) -> bool:
    """Telegram refused the message's entities ("Can't parse entities: …"): as plain text, the
    same message goes."""
    return "can't parse entities" in exc.message.lower()


def is_network_error(exc: BaseException) -> bool:
    """Telegram could not be reached, timed out or answered 5xx: no traceback needed."""
    return isinstance(exc, NetworkError) and not isinstance(exc, BadRequest)


def _reason(exc: BaseException) -> str:
    """PTB's "httpx.ConnectError: All connection attempts failed" without the "httpx."."""
    text = str(exc).removeprefix("httpx.").strip()
    return text[:160] or type(exc).__name__
