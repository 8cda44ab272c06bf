"""Replicated mode's settings: opt-in, and refused with one line when half set; the embedded
default needs none of its packages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.settings import load_settings, secret_values

REPO = Path(__file__).resolve().parents[1]
URL = "postgresql://mnemo:pw-in-url@db/mnemo"


@pytest.fixture(autouse=True)
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "settings.toml").write_text("")
    monkeypatch.setenv("BOT_CONFIG_FILE", str(tmp_path / "settings.toml"))


def test_the_default_is_one_process_polling_on_files() -> None:
    settings = load_settings(None)
    assert settings.telegram.mode == "polling"
    assert settings.store.url is None


def test_webhooks_with_a_database_url_and_a_secret_are_replicated_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BOT_STORE__URL", URL)
    monkeypatch.setenv("BOT_TELEGRAM__MODE", "webhook")
    monkeypatch.setenv("BOT_TELEGRAM__WEBHOOK_URL", "https://bot.example.org/telegram")
    monkeypatch.setenv("BOT_TELEGRAM__WEBHOOK_SECRET", "s3cret")
    settings = load_settings(None)
    assert settings.telegram.mode == "webhook"
    assert {URL, "s3cret"} <= set(secret_values(settings))  # never shown in logs or errors


def test_webhooks_without_the_database_say_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BOT_TELEGRAM__MODE", "webhook")
    with pytest.raises(ConfigError, match=r"store\.url"):
        load_settings(None)


def test_a_database_url_that_is_not_postgresql_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BOT_STORE__URL", "mysql://db/mnemo")
    with pytest.raises(ConfigError, match="PostgreSQL"):
        load_settings(None)


def test_the_embedded_app_imports_none_of_the_replicas_packages(tmp_path: Path) -> None:
    probe = (
        "import sys, bot.app, bot.cli.main\n"
        "loaded = {m.split('.')[0] for m in sys.modules}\n"
        "print(sorted(loaded & {'psycopg', 'psycopg_pool', 'procrastinate', 'pgvector'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
