"""Settings precedence (config file < .env < environment) and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.settings import load_settings
from bot.settings_errors import require_secret

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "settings.toml"
    path.write_text('[llm]\nmodel = "from-config"\nbase_url = "http://config"\n')
    monkeypatch.setenv("BOT_CONFIG_FILE", str(path))
    return path


def test_environment_beats_dotenv_beats_config(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "BOT_LLM__MODEL=from-dotenv\nBOT_TELEGRAM__OWNER_IDS=[1, 2]\nBOT_LOG__FORMAT=json\n"
    )
    monkeypatch.setenv("BOT_LLM__MODEL", "from-env")
    settings = load_settings(env_file)
    assert settings.llm.model == "from-env"
    assert settings.llm.base_url == "http://config"
    assert settings.telegram.owner_ids == (1, 2)
    assert settings.log.format == "json"


def test_defaults_without_any_source(config: Path) -> None:
    config.write_text("")
    settings = load_settings(None)
    assert settings.telegram.base_url == "https://api.telegram.org/bot"
    assert settings.workspace == Path("workspace")
    assert settings.telegram.allowed_user_ids == ()


def test_bad_values_name_the_variable(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOT_LOG__FORMAT", "xml")
    with pytest.raises(ConfigError, match="BOT_LOG__FORMAT"):
        load_settings(None)


@pytest.mark.parametrize(
    ("written", "ids"),
    [("123456789", (123456789,)), ("12, 13", (12, 13)), ("12 13", (12, 13)), ("[12,13]", (12, 13))],
)
def test_user_ids_as_a_person_writes_them(
    config: Path, monkeypatch: pytest.MonkeyPatch, written: str, ids: tuple[int, ...]
) -> None:
    monkeypatch.setenv("BOT_TELEGRAM__OWNER_IDS", written)
    monkeypatch.setenv("BOT_TELEGRAM__ALLOWED_USER_IDS", written)
    settings = load_settings(None)
    assert settings.telegram.owner_ids == settings.telegram.allowed_user_ids == ids


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "BOT_TELEGRAM__OWNER_IDS",
            "@ann",
            "BOT_TELEGRAM__OWNER_IDS: expected a list of whole numbers (got '@ann'), "
            "e.g. BOT_TELEGRAM__OWNER_IDS=[123456789]",
        ),
        (
            "BOT_TELEGRAM__OWNER_IDS",
            "[12, ",
            "BOT_TELEGRAM__OWNER_IDS: not a list of numbers: Expecting value (got '[12, '), "
            "e.g. BOT_TELEGRAM__OWNER_IDS=[123456789]",
        ),
        (
            "BOT_LOG__LEVEL",
            "LOUD",
            "BOT_LOG__LEVEL: expected one of 'DEBUG', 'INFO', 'WARNING' or 'ERROR' "
            "(got 'LOUD'), e.g. BOT_LOG__LEVEL=INFO",
        ),
        (
            "BOT_LLM__TIMEOUT",
            "-5",
            "BOT_LLM__TIMEOUT: must be more than 0 (got '-5'), e.g. BOT_LLM__TIMEOUT=60.0",
        ),
        (
            "BOT_LLM__CONTEXT_WINDOW",
            "big",
            "BOT_LLM__CONTEXT_WINDOW: expected a whole number (got 'big'), "
            "e.g. BOT_LLM__CONTEXT_WINDOW=32768",
        ),
        (
            "BOT_COMPACTION__ENABLED",
            "maybe",
            "BOT_COMPACTION__ENABLED: expected true or false (got 'maybe'), "
            "e.g. BOT_COMPACTION__ENABLED=true",
        ),
        (
            "BOT_TIMEZONE",
            "Mars/Base",
            "BOT_TIMEZONE: unknown time zone 'Mars/Base', e.g. BOT_TIMEZONE=Europe/Berlin",
        ),
        (
            "BOT_MEMORY__KEEP_MESSAGES",
            "50",
            "BOT_MEMORY__KEEP_MESSAGES: must be 10 or less (got '50'), "
            "e.g. BOT_MEMORY__KEEP_MESSAGES=10",
        ),
        (
            "BOT_MEMORY__KEEP_MESSAGES",
            "1",
            "BOT_MEMORY__KEEP_MESSAGES: must be 2 or more (got '1'), "
            "e.g. BOT_MEMORY__KEEP_MESSAGES=10",
        ),
        (
            "BOT_TELEGRAM__MAX_MESSAGE_LENGTH",
            "4000",
            "BOT_TELEGRAM__MAX_MESSAGE_LENGTH: no longer a setting (replies are split at "
            "Telegram's own limit; remove it)",
        ),
        (
            "BOT_LLM__MODLE",
            "gpt-4o",
            "BOT_LLM__MODLE: not a setting Mnemo knows; did you mean BOT_LLM__MODEL?",
        ),
    ],
)
def test_a_bad_value_names_the_variable_says_why_and_shows_a_valid_one(
    config: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as raised:
        load_settings(None)
    assert str(raised.value) == message


def test_every_bad_value_is_named_at_once(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOT_LLM__TIMEOUT", "soon")
    monkeypatch.setenv("BOT_LLM__MAX_RETRIES", "-1")
    with pytest.raises(ConfigError) as raised:
        load_settings(None)
    assert str(raised.value) == (
        "BOT_LLM__TIMEOUT: expected a number (got 'soon'), e.g. BOT_LLM__TIMEOUT=60.0; "
        "BOT_LLM__MAX_RETRIES: must be 0 or more (got '-1'), e.g. BOT_LLM__MAX_RETRIES=2"
    )


def test_missing_secret_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="BOT_LLM__API_KEY is not set"):
        require_secret(None, "BOT_LLM__API_KEY")


def test_a_bad_setting_stops_the_bot_with_one_line(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "BOT_TELEGRAM__OWNER_IDS": "me",
    }
    result = subprocess.run(
        [sys.executable, "-m", "bot", "run"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: BOT_TELEGRAM__OWNER_IDS: expected a list of whole numbers (got 'me'), "
        "e.g. BOT_TELEGRAM__OWNER_IDS=[123456789]"
    ]


def test_missing_token_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "BOT_LLM__API_KEY": "sk-test", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "bot", "run"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: BOT_TELEGRAM__TOKEN is not set: run `make setup`, "
        "or put it in .env (see .env.example)"
    ]


def test_streaming_is_on_by_default_and_turned_off_by_one_variable(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.write_text("")
    assert load_settings(None).telegram.stream is True
    assert load_settings(None).telegram.stream_interval == 1.0
    monkeypatch.setenv("BOT_TELEGRAM__STREAM", "false")
    assert load_settings(None).telegram.stream is False
    monkeypatch.setenv("BOT_TELEGRAM__STREAM_INTERVAL", "0")
    with pytest.raises(ConfigError, match="BOT_TELEGRAM__STREAM_INTERVAL"):
        load_settings(None)


def test_the_shipped_config_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOT_CONFIG_FILE", str(REPO / "config" / "settings.toml"))
    telegram = load_settings(None).telegram
    assert (telegram.stream, telegram.stream_interval) == (True, 1.0)
