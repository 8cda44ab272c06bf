"""A session file's `metadata`: how `SessionMarks` are written and read back.

Each mark has the key it always had, and its value as text: a file written before the marks
were typed reads the same. A value that cannot be read is left out (its writer writes it again
on the next turn); a key no writer knows is kept as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from bot.models import SessionMarks

LAST_INBOUND = "last_inbound_id"
SCOPE = "memory_scope"  # "" global, else a chat's key
SYSTEM_TOKENS = "prompt_system_tokens"
FACTOR = "prompt_token_factor"
FLUSHED_CYCLE = "memory_flush_cycle"
FLUSHED_AT = "memory_flush_at"
RECOVERED_FROM = "recovered_from"
ARCHIVED_PART = "archived_part"
REVISION = "revision"
STATE = "state"
ENDED = "ended"

KEYS = {  # field → its key in the file
    "last_inbound": LAST_INBOUND,
    "scope": SCOPE,
    "system_tokens": SYSTEM_TOKENS,
    "token_factor": FACTOR,
    "flushed_cycle": FLUSHED_CYCLE,
    "flushed_at": FLUSHED_AT,
    "recovered_from": RECOVERED_FROM,
    "archived_part": ARCHIVED_PART,
    "revision": REVISION,
    "state": STATE,
    "ended": ENDED,
}


def encode_marks(marks: SessionMarks) -> dict[str, str]:
    encoded = dict(marks.unknown)
    for name, key in KEYS.items():
        value = getattr(marks, name)
        if value is None or value is False:
            continue
        encoded[key] = _text(value)
    return encoded


def decode_marks(metadata: Mapping[str, object]) -> SessionMarks:
    read: dict[str, Any] = {}
    keys = set(KEYS.values())
    for name, key in KEYS.items():
        if key in metadata and (value := _READ[name](str(metadata[key]))) is not None:
            read[name] = value
    unknown = tuple((str(k), str(v)) for k, v in metadata.items() if k not in keys)
    return SessionMarks(**read, unknown=unknown)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true"
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _datetime(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _str(text: str) -> str:
    return text


_READ: dict[str, Callable[[str], object]] = {
    "last_inbound": _str,
    "scope": _str,
    "system_tokens": _int,
    "token_factor": _float,
    "flushed_cycle": _int,
    "flushed_at": _datetime,
    "recovered_from": _str,
    "archived_part": lambda text: text == "true" or None,
    "revision": _int,
    "state": lambda text: text if text in ("active", "ended") else None,
    "ended": _str,
}
