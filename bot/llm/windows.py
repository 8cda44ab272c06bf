"""Context windows per model: what the bot assumes a model can take (and which models see
images).

`ModelWindows` answers, first to last: the `BOT_LLM__CONTEXT_WINDOW` setting (for the
configured model); the limit a provider stated in a context-overflow error, remembered in the
workspace (`state/windows.json`) so a restart knows it too; `config/models.json` (versioned); its
default for a model nobody listed (`/status` says which, `source`):

    {"version": 1, "default_context_window": 32768, "context_windows": {"gpt-4o": 128000, …},
     "vision": ["gpt-4o", …]}

`vision` lists the models that read images (matched the same way; `bot.media.photo` asks, and
`BOT_MEDIA__VISION` overrides it for the configured model).

A model name is matched case-insensitively, first exactly, then by the longest known name it
starts with, ending at a separator ("gpt-4o-mini-2024-07-18" → "gpt-4o-mini", but "gpt-4o" is
not "gpt-4"); a provider prefix ("openai/gpt-4o", "openrouter/openai/gpt-4o") is tried without
it. A missing or broken file leaves the defaults, with a warning in the log.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import structlog

from bot import versioned
from bot.settings import Settings
from bot.storage.files import atomic_write_text
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)

FORMAT_VERSION = 1
DEFAULT_CONTEXT_WINDOW = 32768
OVERRIDE_VAR = "BOT_LLM__CONTEXT_WINDOW"
T = TypeVar("T")


@dataclass(frozen=True)
class ContextWindows:
    default: int = DEFAULT_CONTEXT_WINDOW
    known: Mapping[str, int] = field(default_factory=dict)  # lower-case names
    vision: frozenset[str] = frozenset()  # lower-case names of the models that read images

    def for_model(self, model: str) -> int:
        """The model's window in tokens; `default` for a model nobody listed."""
        return self.listed(model) or self.default

    def source(self, model: str) -> str:
        if self.listed(model) is not None:
            return "from config/models.json"
        return f"assumed: not in config/models.json; set {OVERRIDE_VAR}"

    def listed(self, model: str) -> int | None:
        """The model's window as listed, or None."""
        return _lookup(self.known, model)

    def sees_images(self, model: str) -> bool:
        """Whether the model is listed under `vision`."""
        return _lookup(dict.fromkeys(self.vision, True), model) or False


def _lookup(known: Mapping[str, T], model: str) -> T | None:
    """`model`'s entry in `known`: by its name, then without each provider prefix; a name is
    matched exactly, else by the longest known name it starts with, ending at a separator."""
    for name in _names(model):
        if name in known:
            return known[name]
        prefixes = [k for k in known if name.startswith(k) and not name[len(k)].isalnum()]
        if prefixes:
            return known[max(prefixes, key=len)]
    return None


def _names(model: str) -> list[str]:
    """The name, then without each provider prefix: "a/b/c" → ["a/b/c", "b/c", "c"]."""
    parts = model.strip().lower().split("/")
    return ["/".join(parts[index:]) for index in range(len(parts))]


def load_windows(path: Path) -> ContextWindows:
    """The windows in `path`; the defaults (and a logged warning) if it cannot be used."""
    try:
        return parse_windows(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        log.warning("models_file_missing", path=str(path), default=DEFAULT_CONTEXT_WINDOW)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.warning(
            "models_file_unusable", path=str(path), reason=str(exc), default=DEFAULT_CONTEXT_WINDOW
        )
    return ContextWindows()


def parse_windows(text: str) -> ContextWindows:
    """A models document's text → `ContextWindows`; `ValueError` says what is wrong with it."""
    document = versioned.decode(text, FORMAT_VERSION)
    default = _tokens(document.get("default_context_window", DEFAULT_CONTEXT_WINDOW), "default")
    windows = document.get("context_windows", {})
    if not isinstance(windows, dict):
        raise ValueError("context_windows must be an object of model name → tokens")
    known = {str(name).strip().lower(): _tokens(size, str(name)) for name, size in windows.items()}
    vision = document.get("vision", [])
    if not isinstance(vision, list) or not all(isinstance(name, str) for name in vision):
        raise ValueError("vision must be a list of model names")
    return ContextWindows(
        default=default, known=known, vision=frozenset(name.strip().lower() for name in vision)
    )


def _tokens(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"the window of {name!r} must be a positive whole number: {value!r}")
    return value


class ModelWindows:
    """The window of each model, as the bot knows it now (see the module docstring)."""

    def __init__(
        self,
        table: ContextWindows,
        *,
        learned_file: Path | None = None,  # None: what providers state is not remembered
        override: tuple[str, int] | None = None,  # (model, tokens) from the settings
    ) -> None:
        self.table = table
        self.learned_file = learned_file
        self.override = override
        self._learned = _read_learned(learned_file) if learned_file else {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, workspace: Workspace) -> ModelWindows:
        """The setting, what providers stated (remembered), models.json."""
        window = settings.llm.context_window
        return cls(
            load_windows(settings.compaction.models_file),
            learned_file=workspace.state_dir / "windows.json",
            override=(settings.llm.model, window) if window else None,
        )

    def for_model(self, model: str) -> int:
        if self.override and self.override[0] == model:
            return self.override[1]
        if (learned := self._learned.get(_key(model))) is not None:
            return learned
        return self.table.for_model(model)

    def sees_images(self, model: str) -> bool:
        return self.table.sees_images(model)

    def source(self, model: str) -> str:
        """Where `for_model`'s answer comes from, for a person to read."""
        if self.override and self.override[0] == model:
            return f"set by {OVERRIDE_VAR}"
        if _key(model) in self._learned:
            return "as the provider stated it"
        return self.table.source(model)

    def learn(self, model: str, tokens: int) -> bool:
        """Remember the window a provider stated for `model` (blocking: it writes the file);
        False when it was known already or the setting decides."""
        if tokens <= 0 or self._learned.get(_key(model)) == tokens:
            return False
        if self.override and self.override[0] == model:
            return False
        with self._lock:
            self._learned = {**self._learned, _key(model): tokens}
            if self.learned_file is not None:
                body = {"context_windows": self._learned}
                text = versioned.encode(FORMAT_VERSION, body, indent=2, ascii_only=True)
                atomic_write_text(self.learned_file, text + "\n")
        log.warning("context_window_learned", model=model, tokens=tokens)
        return True


def _key(model: str) -> str:
    return model.strip().lower()


def _read_learned(path: Path) -> dict[str, int]:
    """The windows providers stated, as remembered; {} when none (or unusable, logged)."""
    try:
        windows = parse_windows(path.read_text(encoding="utf-8")).known
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.warning("learned_windows_unusable", path=str(path), reason=str(exc))
        return {}
    return dict(windows)
