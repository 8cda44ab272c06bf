"""Context windows per model: exact names, dated and provider-prefixed names, unknown models,
and a models file that is missing or broken."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.llm.windows import DEFAULT_CONTEXT_WINDOW, ContextWindows, load_windows
from tests.harness import REPO

COMMITTED = REPO / "config" / "models.json"


def models(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "models.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


@pytest.fixture
def committed() -> ContextWindows:
    with capture_logs() as logs:
        windows = load_windows(COMMITTED)
    assert logs == []
    return windows


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128000),
        ("GPT-4o-Mini", 128000),
        ("gpt-4o-mini-2024-07-18", 128000),
        ("gpt-4.1-mini-2025-04-14", 1047576),
        ("claude-sonnet-4-20250514", 200000),
        ("llama3.1:8b", 131072),
        ("openai/gpt-5-mini", 400000),
        ("openrouter/google/gemini-2.5-pro", 1048576),
        ("qwen2.5:7b-instruct-q4_K_M", 32768),
    ],
)
def test_committed_file_knows_common_models(
    committed: ContextWindows, model: str, window: int
) -> None:
    assert committed.for_model(model) == window


def test_an_unknown_model_gets_the_file_default(tmp_path: Path) -> None:
    path = models(
        tmp_path,
        {"version": 1, "default_context_window": 4096, "context_windows": {"gpt-4o": 128000}},
    )

    windows = load_windows(path)

    assert windows.for_model("my-local-model") == 4096
    assert windows.for_model("gpt-4") == 4096  # "gpt-4o" is not a prefix of "gpt-4"


def test_the_longest_prefix_wins_and_must_end_at_a_separator(tmp_path: Path) -> None:
    document = {
        "version": 1,
        "context_windows": {"gpt-4": 8192, "gpt-4o": 128000, "gpt-4o-mini": 100000},
    }
    windows = load_windows(models(tmp_path, document))

    assert windows.for_model("gpt-4o-mini-2024-07-18") == 100000
    assert windows.for_model("gpt-4o-2024-08-06") == 128000
    assert windows.for_model("gpt-4-turbo") == 8192
    assert windows.for_model("gpt-4omega") == DEFAULT_CONTEXT_WINDOW


@pytest.mark.parametrize(
    ("content", "event"),
    [
        (None, "models_file_missing"),
        ("{not json", "models_file_unusable"),
        ({"version": 2, "context_windows": {}}, "models_file_unusable"),
        ({"version": 1, "context_windows": {"gpt-4o": -5}}, "models_file_unusable"),
        ({"version": 1, "context_windows": ["gpt-4o"]}, "models_file_unusable"),
        (b"\xff\xfe\x00", "models_file_unusable"),
    ],
    ids=["missing", "not-json", "other-version", "negative", "not-an-object", "not-utf8"],
)
def test_a_missing_or_broken_file_gives_defaults_and_a_warning(
    tmp_path: Path, content: Any, event: str
) -> None:
    path = tmp_path / "models.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        models(tmp_path, content)

    with capture_logs() as logs:
        windows = load_windows(path)

    assert windows.for_model("gpt-4o") == DEFAULT_CONTEXT_WINDOW
    [warning] = logs
    assert (warning["event"], warning["log_level"]) == (event, "warning")
    assert warning["path"] == str(path)


@pytest.mark.parametrize(
    ("model", "sees"),
    [
        ("gpt-4o", True),
        ("openai/gpt-4o-mini-2024-07-18", True),
        ("gpt-4", False),
        ("qwen2.5:7b", False),
        ("llama3.2-vision:11b", True),
    ],
)
def test_the_committed_file_says_which_models_read_images(
    committed: ContextWindows, model: str, sees: bool
) -> None:
    assert committed.sees_images(model) is sees


def test_a_vision_entry_that_is_not_a_list_of_names_is_refused(tmp_path: Path) -> None:
    document = {"version": 1, "context_windows": {}, "vision": "gpt-4o"}
    with capture_logs() as logs:
        windows = load_windows(models(tmp_path, document))
    assert windows == ContextWindows()
    assert "vision must be a list" in logs[0]["reason"]
