"""What one of doctor's checks found (`Finding`), and the secret a check needs (`secret`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import SecretStr

from bot.errors import ConfigError
from bot.settings import require_secret


@dataclass(frozen=True)
class Finding:
    level: Literal["ok", "warn", "FAIL"]
    text: str


def secret(value: SecretStr | None, variable: str, hint: str) -> str:
    """The secret's value, or a `ConfigError` naming the variable and how to fill it."""
    try:
        return require_secret(value, variable)
    except ConfigError:
        raise ConfigError(f"{variable} is not set ({hint}): put it in .env") from None
