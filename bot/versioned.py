"""A versioned JSON document, `{"version": N, …}`: the one reader and writer of that envelope
for every JSON file (or JSONL line) the bot keeps; each owner names its own version.

`decode` gives the object a text holds when its `"version"` is the one this code reads, and a
`VersionError` (a `ValueError`) saying what is wrong otherwise: not JSON, not an object, another
version. `encode` writes the envelope (the version first). `load` reads one from a workspace
document (`bot.storage.files.Documents.read`): None when there is none, and when it cannot be read
or is of another version (logged once as `event`), so the store starts from its empty form.
What a document holds inside the envelope is its owner's: each turns the object into its own
records (`Fields` is what it reads them from).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)
Fields = dict[str, object]  # a JSON object as read: its owner checks each value it takes


class VersionError(ValueError):
    """Not a document of the version this code reads."""


def decode(text: str | bytes, version: int, *, unversioned: bool = False) -> Fields:
    """The object `text` holds, of `version`; `VersionError` when it is not one. With
    `unversioned`, an object without a `"version"` is read as of `version` (a line a person
    wrote by hand, where the file's owner allows it)."""
    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise VersionError(f"not JSON: {exc}") from exc
    return fields(document, version, unversioned=unversioned)


def fields(document: object, version: int, *, unversioned: bool = False) -> Fields:
    """`document` (JSON already parsed) as an object of `version`; `VersionError` if not
    (`unversioned`: as `decode`)."""
    if not isinstance(document, dict):
        raise VersionError(f'expected a JSON object with "version": {version}')
    if unversioned and "version" not in document:
        return document
    if document.get("version") != version:
        raise VersionError(f"unknown version {document.get('version')!r}")
    return document


def encode(
    version: int,
    body: Mapping[str, object],
    *,
    indent: int | None = None,
    compact: bool = False,  # no spaces: one line (JSONL, large ledgers)
    ascii_only: bool = False,  # non-ASCII text as \u escapes
) -> str:
    """`body` in the envelope, the version first."""
    document = {"version": version, **body}
    separators = (",", ":") if compact else None
    return json.dumps(document, ensure_ascii=ascii_only, indent=indent, separators=separators)


def load(
    read: Callable[[Path], bytes | None], path: Path, version: int, *, event: str
) -> Fields | None:
    """The document at `path` as `read` gives it (a workspace's `Documents.read`), of
    `version`; None when there is none, or it is unreadable (logged as `event`) or of another
    version."""
    try:
        data = read(path)
        if data is None:
            return None
        document = json.loads(data.decode("utf-8"))
    except (OSError, ValueError) as exc:
        log.warning(event, path=str(path), reason=str(exc)[:200])
        return None
    try:
        return fields(document, version)
    except VersionError:
        return None


def mapping(value: object) -> Fields:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def objects(value: object, name: str = "value") -> list[Fields]:
    """`value` when it is a list of JSON objects; `TypeError` (naming it `name`) if not."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise TypeError(f"{name} is not a list of objects")
    return value


def number(value: object) -> int:
    """`value` as a whole number (from a number or its text); `TypeError` or `ValueError` if it
    is none."""
    if isinstance(value, bool) or not isinstance(value, int | str | float):
        raise TypeError(f"not a number: {value!r}")
    return int(value)


def whole(value: object) -> int:
    """`value` when it is a whole number (not a bool), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
