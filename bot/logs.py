"""Logging and scrubbing: structlog for our lines and the libraries' (PTB, httpx), JSON or
console, with every secret cut out.

`Scrubber` is the one owner of scrubbing: the log renderer runs every rendered line through it,
and the command line runs every line it prints itself through it too (`python -m bot doctor`,
`error: …`). It cuts each known secret (the bot token, the model's API key, the LightRAG key) as
written, JSON-escaped, URL-encoded and, for a bot token, its secret part alone; and any
token-shaped, `sk-` key-shaped or partly masked (`sk-ab****yz`) text, known or not, so a secret a
server echoes back in an error body is cut as well.

A network error (connection refused, timeout, a Bot API 5xx) logged with its traceback by a
library or by us becomes one line: `TransientErrors` drops the traceback and keeps
`error="ConnectError: …"`. An outage then writes one warning per retry, not a screen of
tracebacks per retry. Which exceptions count is the caller's `transient` predicate
(`bot.channels.telegram.errors.is_network_error` adds PTB's own `NetworkError`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, quote_plus

import httpx
import structlog
from structlog.types import EventDict, Processor, WrappedLogger

REDACTED = "[REDACTED]"
_MIN_SECRET = 4
_SHAPES = re.compile(
    r"\d{5,}(?::|%3A)[A-Za-z0-9_-]{20,}"  # a Telegram bot token, as in /bot<id>:<secret>/getMe
    r"|\bsk-[A-Za-z0-9_-]{16,}"  # an OpenAI-style API key
    r"|[A-Za-z0-9_-]{2,}[*•]{4,}[A-Za-z0-9_-]*|[*•]{4,}[A-Za-z0-9_-]{2,}",  # a masked key
    re.IGNORECASE,
)
_NOISY = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "telegram.ext.Updater")

Transient = Callable[[BaseException], bool]
_TRANSPORT = (ConnectionError, TimeoutError, socket.gaierror, httpx.TransportError)


class Scrubber:
    """Cuts secrets out of text: known ones in every spelling, and anything shaped like one."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms = {form for secret in secrets for form in _spellings(secret)}
        ordered = sorted((f for f in forms if len(f) >= _MIN_SECRET), key=len, reverse=True)
        self._known = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        if self._known is not None:
            text = self._known.sub(REDACTED, text)
        return _SHAPES.sub(REDACTED, text)


def _spellings(secret: str) -> set[str]:
    """The secret as it may appear in a log or an error body: raw, JSON- and URL-escaped; a bot
    token's secret part (after the colon) on its own as well."""
    parts = [secret.strip()]
    if ":" in parts[0]:
        parts.append(parts[0].split(":", 1)[1])
    forms: set[str] = set()
    for part in parts:
        escaped = json.dumps(part)[1:-1]
        forms |= {part, escaped, escaped.replace("/", "\\/"), repr(part)[1:-1]}
        forms |= {quote(part, safe=""), quote(part), quote_plus(part)}
    return forms


@dataclass(eq=False)
class Redacting:
    """Wraps a renderer and scrubs its input (before JSON or `repr` escapes a secret out of
    recognition) and its output (a traceback the console renderer formats)."""

    renderer: Processor
    scrub: Scrubber

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> Any:
        rendered = self.renderer(logger, name, self._scrubbed(event_dict))
        return self.scrub(rendered) if isinstance(rendered, str) else rendered

    def _scrubbed(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {key: self._scrubbed(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._scrubbed(item) for item in value]
        return value  # an exc_info tuple stays one; its text is scrubbed once rendered


@dataclass(eq=False)
class TransientErrors:
    """A network error's traceback becomes one field: `error="ConnectError: …"`."""

    transient: Transient

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> EventDict:
        exc = _exception(event_dict.get("exc_info"))
        if exc is not None and self.transient(exc):
            del event_dict["exc_info"]
            event_dict["error"] = f"{type(exc).__name__}: {exc}"[:300]
        return event_dict


def _exception(exc_info: Any) -> BaseException | None:
    if isinstance(exc_info, BaseException):
        return exc_info
    if isinstance(exc_info, tuple) and len(exc_info) == 3:
        return exc_info[1] if isinstance(exc_info[1], BaseException) else None
    return sys.exc_info()[1] if exc_info is True else None


def is_transport_error(exc: BaseException) -> bool:
    """A connection that failed or timed out, here or anywhere in the chain of causes (not
    every `OSError`: a disk error keeps its traceback)."""
    seen: BaseException | None = exc
    for _ in range(8):  # a chain is short; a cycle is not followed
        if seen is None:
            return False
        if isinstance(seen, _TRANSPORT):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _file_handler(path: Path) -> logging.Handler:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))  # made private
    return logging.FileHandler(path, encoding="utf-8")


def configure(
    *,
    fmt: Literal["json", "console"],
    level: str = "INFO",
    secrets: Iterable[str] = (),
    stream: Any = None,
    transient: Transient = is_transport_error,
    path: Path | None = None,  # given: lines are appended to this file (0600), not `stream`
) -> Scrubber:
    """Route structlog and stdlib logging through one scrubbing renderer; the `Scrubber` it
    uses, for what the caller prints itself."""
    scrub = Scrubber(secrets)
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    handler = _file_handler(path) if path else logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(_formatter(fmt, shared, scrub, transient))
    _route_stdlib(handler, level)
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    return scrub


def _formatter(
    fmt: Literal["json", "console"],
    shared: list[Processor],
    scrub: Scrubber,
    transient: Transient,
) -> logging.Formatter:
    """One line per event, as `fmt` says, every secret redacted from the finished line."""
    if fmt == "json":
        final: list[Processor] = [
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ]
    else:  # a plain traceback: rich's would show locals, cut and wrapped past any redaction
        plain = structlog.dev.plain_traceback
        final = [structlog.dev.ConsoleRenderer(colors=False, exception_formatter=plain)]
    *pre, renderer = final
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            TransientErrors(transient),
            *pre,
            Redacting(renderer, scrub),
        ],
    )


def _route_stdlib(handler: logging.Handler, level: str) -> None:
    """Every stdlib logger through `handler`; the libraries' chatter quieter."""
    root = logging.getLogger()
    for old in root.handlers:  # a file a previous `configure` opened is closed, not left to gc
        if old is not handler:
            old.close()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in _NOISY:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    # a damaged PDF is told to its sender in one line (`bot.media.extraction`), not per object
    logging.getLogger("pypdf").setLevel(max(logging.ERROR, root.level))
    # a database outage is told once by the replica (`bot.replicas.database.OUTAGES`), not per
    # connection the pool tries again
    logging.getLogger("psycopg.pool").setLevel(max(logging.ERROR, root.level))
