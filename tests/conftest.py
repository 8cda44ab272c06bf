"""Shared fixtures. Sections: fakes of external services (more sections to come)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram

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
