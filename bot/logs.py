"""Logging: structlog for our lines and the libraries' (PTB, httpx), JSON or console, redacted.

Every line carries the bound `chat` and `turn`; secrets (the bot token, API keys) are cut out of
the final rendered text, so neither a URL logged by httpx nor a traceback can leak them.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable
from typing import Any, Literal
from urllib.parse import quote

import structlog
from structlog.types import EventDict, Processor, WrappedLogger

REDACTED = "[REDACTED]"
# A Telegram bot token anywhere (URLs like /bot<id>:<secret>/sendMessage).
_TOKEN_SHAPE = re.compile(r"\d{5,}:[A-Za-z0-9_-]{20,}")
_NOISY = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "telegram.ext.Updater")


class Redacting:
    """Wraps a renderer and removes every secret from what it renders."""

    def __init__(self, renderer: Processor, secrets: Iterable[str]) -> None:
        self.renderer = renderer
        self.secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> Any:
        return self.scrub(self.renderer(logger, name, event_dict))

    def scrub(self, text: Any) -> Any:
        return scrub(text, self.secrets) if isinstance(text, str) else text


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` without any of the secrets (also JSON- or URL-escaped) or a bot token's shape."""
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        for form in {secret, json.dumps(secret)[1:-1], quote(secret, safe="")}:
            text = text.replace(form, REDACTED)
    return _TOKEN_SHAPE.sub(REDACTED, text)


def configure(
    *,
    fmt: Literal["json", "console"],
    level: str = "INFO",
    secrets: Iterable[str] = (),
    stream: Any = None,
) -> None:
    """Route structlog and stdlib logging through one redacting renderer."""
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if fmt == "json":
        final: list[Processor] = [
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ]
    else:
        final = [structlog.dev.ConsoleRenderer(colors=False)]
    *pre, renderer = final
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            *pre,
            Redacting(renderer, secrets),
        ],
    )
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in _NOISY:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
