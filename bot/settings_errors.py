"""Invalid settings in a person's words: each problem as its variable, what is wrong in plain
words, the value given, and a valid example (`describe`), e.g.

    BOT_LOG__LEVEL: expected one of 'DEBUG', 'INFO', 'WARNING' or 'ERROR' (got 'LOUD'),
    e.g. BOT_LOG__LEVEL=INFO

`bot.settings.load_settings` raises it as one `ConfigError`; the command line prints it as one
line (no traceback) and exits non-zero. Secrets' values are never repeated; a secret a
command needs and nobody set is one such line too (`require_secret`).
"""

from __future__ import annotations

import difflib
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from bot.errors import ConfigError

PREFIX = "BOT_"
DELIMITER = "__"
GOT_CHARS = 40
# examples for settings whose default is no example (None, or a list that is empty)
EXAMPLES = {
    "BOT_TIMEZONE": "Europe/Berlin",
    "BOT_TELEGRAM__OWNER_IDS": "[123456789]",
    "BOT_TELEGRAM__ALLOWED_USER_IDS": "[123456789, 987654321]",
    "BOT_LLM__FAST_MODEL": "gpt-4o-mini",
    "BOT_LLM__TEMPERATURE": "0.7",
    "BOT_LLM__MAX_OUTPUT_TOKENS": "1024",
    "BOT_LLM__CONTEXT_WINDOW": "32768",
    "BOT_SESSION__DAILY_RESET_HOUR": "4",
    "BOT_SESSION__IDLE_MINUTES": "240",
    "BOT_RAG__MODEL2VEC_PATH": "models/potion-base-8M",
    "BOT_RAG__EMBEDDING_BASE_URL": "https://api.openai.com/v1",
}
_WORDS = {
    "int_parsing": "expected a whole number",
    "int_type": "expected a whole number",
    "int_from_float": "expected a whole number",
    "float_parsing": "expected a number",
    "float_type": "expected a number",
    "bool_parsing": "expected true or false",
    "bool_type": "expected true or false",
    "string_type": "expected text",
    "tuple_type": "expected a list",
    "list_type": "expected a list",
    "path_type": "expected a path",
    "missing": "is required",
    "greater_than": "must be more than {gt}",
    "greater_than_equal": "must be {ge} or more",
    "less_than": "must be less than {lt}",
    "less_than_equal": "must be {le} or less",
    "literal_error": "expected one of {expected}",
}


RETIRED = {  # settings that did nothing and were removed: what a person who set one should know
    "BOT_TELEGRAM__MAX_MESSAGE_LENGTH": "replies are split at Telegram's own limit; remove it",
}


def describe(exc: ValidationError, model: type[BaseModel]) -> str:
    """Every problem in `exc` (from validating `model`), joined in one line."""
    return "; ".join(dict.fromkeys(problem(error, model) for error in exc.errors()))


def problem(error: ErrorDetails, model: type[BaseModel]) -> str:
    path = [part for part in error["loc"] if isinstance(part, str)]
    name = PREFIX + DELIMITER.join(part.upper() for part in path)
    if error["type"] == "extra_forbidden" and name in RETIRED:
        return f"{name}: no longer a setting ({RETIRED[name]})"
    if error["type"] == "extra_forbidden":
        return f"{name}: not a setting Mnemo knows{_nearest(model, path)}"
    field = _field(model, path)
    words = _words(error, in_list=len(path) < len(error["loc"]))
    example = _example(name, field)
    got = "" if _secret(field) else _got(error["input"], words)
    return f"{name}: {words}{got}" + (f", e.g. {name}={example}" if example else "")


def _words(error: ErrorDetails, *, in_list: bool) -> str:
    template = _WORDS.get(error["type"])
    if template is None:
        words = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    else:
        words = template.format(**{k: _plain(v) for k, v in error.get("ctx", {}).items()})
    if in_list and words.startswith("expected a "):  # an item of a list: say what the list is
        words = "expected a list of " + words.removeprefix("expected a ").replace(
            "number", "numbers"
        )
    return words


def _plain(value: Any) -> Any:
    """`0.0` as `0`: a bound as a person would write it."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _got(value: Any, words: str) -> str:
    """` (got 'x')`, unless the words say it already or it is no plain value."""
    if not isinstance(value, str | int | float) or repr(value) in words:
        return ""
    shown = repr(value)
    return f" (got {shown[:GOT_CHARS]}{'…' if len(shown) > GOT_CHARS else ''})"


def _field(model: type[BaseModel], path: list[str]) -> FieldInfo | None:
    """The field at `path` in `model` and its sections, or None when there is none."""
    field = None
    for part in path:
        if model is None or part not in model.model_fields:
            return None
        field = model.model_fields[part]
        model = _section(field.annotation)  # type: ignore[assignment]
    return field


def _section(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _example(name: str, field: FieldInfo | None) -> str | None:
    if name in EXAMPLES:
        return EXAMPLES[name]
    if field is None or _section(field.annotation) is not None:
        return None
    default = field.default  # valid, and what a person most likely meant to change
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, int | float | str | Path):
        return str(default)
    choices = _literal_choices(field.annotation)
    return str(choices[0]) if choices else None


def _literal_choices(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        for arm in get_args(annotation):
            if choices := _literal_choices(arm):
                return choices
    return ()


def _secret(field: FieldInfo | None) -> bool:
    return field is not None and "Secret" in str(field.annotation)


def _nearest(model: type[BaseModel], path: list[str]) -> str:
    """`; did you mean BOT_LLM__MODEL?` for a misspelt setting, when one is close."""
    parent = _field(model, path[:-1]) if len(path) > 1 else None
    section = _section(parent.annotation) if parent is not None else model
    if section is None:
        return ""
    close = difflib.get_close_matches(path[-1], list(section.model_fields), n=1)
    if not close:
        return " (check the spelling)"
    name = PREFIX + DELIMITER.join(part.upper() for part in [*path[:-1], close[0]])
    return f"; did you mean {name}?"


def require_secret(value: SecretStr | None, variable: str) -> str:
    """The secret's value, or a one-line `ConfigError` naming the variable to set."""
    if value is None or not value.get_secret_value().strip():
        raise ConfigError(
            f"{variable} is not set: run `make setup`, or put it in .env (see .env.example)"
        )
    return value.get_secret_value()
