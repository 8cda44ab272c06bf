"""Context windows per model: `config/models.json` (versioned), a default for unknown models.

    {"version": 1, "default_context_window": 32768, "context_windows": {"gpt-4o": 128000, …}}

A model name is matched case-insensitively, first exactly, then by the longest known name it
starts with, ending at a separator ("gpt-4o-mini-2024-07-18" → "gpt-4o-mini", but "gpt-4o" is
not "gpt-4"); a provider prefix ("openai/gpt-4o", "openrouter/openai/gpt-4o") is tried without
it. A missing or broken file leaves the defaults, with a warning in the log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger(__name__)

FORMAT_VERSION = 1
DEFAULT_CONTEXT_WINDOW = 32768


@dataclass(frozen=True)
class ContextWindows:
    default: int = DEFAULT_CONTEXT_WINDOW
    known: Mapping[str, int] = field(default_factory=dict)  # lower-case names

    def for_model(self, model: str) -> int:
        """The model's window in tokens; `default` for a model nobody listed."""
        for name in _names(model):
            if (window := self._match(name)) is not None:
                return window
        return self.default

    def _match(self, name: str) -> int | None:
        if name in self.known:
            return self.known[name]
        prefixes = [k for k in self.known if name.startswith(k) and not name[len(k)].isalnum()]
        return self.known[max(prefixes, key=len)] if prefixes else None


def _names(model: str) -> list[str]:
    """The name, then without each provider prefix: "a/b/c" → ["a/b/c", "b/c", "c"]."""
    parts = model.strip().lower().split("/")
    return ["/".join(parts[index:]) for index in range(len(parts))]


def load_windows(path: Path) -> ContextWindows:
    """The windows in `path`; the defaults (and a logged warning) if it cannot be used."""
    try:
        return parse_windows(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        log.warning("models_file_missing", path=str(path), default=DEFAULT_CONTEXT_WINDOW)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.warning(
            "models_file_unusable", path=str(path), reason=str(exc), default=DEFAULT_CONTEXT_WINDOW
        )
    return ContextWindows()


def parse_windows(document: Any) -> ContextWindows:
    """A models document → `ContextWindows`; `ValueError` says what is wrong with it."""
    if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
        raise ValueError(f'expected a JSON object with "version": {FORMAT_VERSION}')
    default = _tokens(document.get("default_context_window", DEFAULT_CONTEXT_WINDOW), "default")
    windows = document.get("context_windows", {})
    if not isinstance(windows, dict):
        raise ValueError("context_windows must be an object of model name → tokens")
    known = {str(name).strip().lower(): _tokens(size, str(name)) for name, size in windows.items()}
    return ContextWindows(default=default, known=known)


def _tokens(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"the window of {name!r} must be a positive whole number: {value!r}")
    return value
