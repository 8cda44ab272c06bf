"""Settings precedence (config file < .env < environment) and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.settings import load_settings, require_secret

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


def test_unparsable_list_is_one_clear_error(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOT_TELEGRAM__OWNER_IDS", "12, 13")
    with pytest.raises(ConfigError, match="JSON"):
        load_settings(None)


def test_missing_secret_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="BOT_LLM__API_KEY is not set"):
        require_secret(None, "BOT_LLM__API_KEY")


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
        "error: BOT_TELEGRAM__TOKEN is not set: put it in .env (see .env.example)"
    ]
