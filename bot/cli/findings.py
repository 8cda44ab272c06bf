"""What one of doctor's checks found (`Finding`), and the secret a check needs (`secret`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import SecretStr

from bot.errors import ConfigError
from bot.settings_errors import require_secret


@dataclass(frozen=True)
class Finding:
    level: Literal["ok", "warn", "FAIL"]
    text: str


def secret(value: SecretStr | None, variable: str, missing: str) -> str:
    """The secret's value, or a `ConfigError` saying what is `missing` (in a person's words)
    and how to give it: `make setup`, the step they came from, or the variable in .env."""
    try:
        return require_secret(value, variable)
    except ConfigError:
        raise ConfigError(f"{missing}: run make setup (or set {variable} in .env)") from None
