"""Shared fixtures. Sections: fakes of external services; the app; structured items."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import App
from bot.memory.items.store import ItemStore
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import make_settings, started_app
from tests.pg import pg_database

# ----------------------------------------------------------------------------- fake services


@pytest.fixture
async def fake_telegram() -> AsyncIterator[FakeTelegram]:
    """A started fake Telegram Bot API on 127.0.0.1; point PTB at ``fake_telegram.base_url``."""
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    """A started scripted OpenAI fake; teardown fails if it was over- or under-used."""
    async with FakeOpenAI() as fake:
        yield fake
    fake.assert_done()


# ----------------------------------------------------------------------------- the app


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
async def app(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    """The real app (no Telegram) over `workspace`, its model the `fake_openai` server."""
    async with started_app(make_settings(workspace, telegram=None, openai=fake_openai)) as app:
        yield app


# ----------------------------------------------------------------------------- structured items


@pytest.fixture
def store(tmp_path: Path) -> ItemStore:
    """An item store over a bare workspace in `tmp_path`."""
    return ItemStore(Workspace(tmp_path), FileLocks())


# ----------------------------------------------------------------------------- PostgreSQL


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A new, empty database on the server `MNEMO_TEST_PG` names (`.ci/run` starts one),
    dropped afterwards; the test is skipped, with the reason, without one."""
    async with pg_database() as url:
        yield url
