"""Model failures by cause, as real providers send them, and what each person is told: the owner
(in their private chat) what failed and what to change, anyone else a short line; never a key."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import App
from bot.errors import LLMCause, LLMError, LLMRejected, LLMUnavailable
from bot.llm import failures
from bot.llm.openai_chat import OpenAIChat
from bot.models import ChatMessage
from tests.fakes.openai_api import PROVIDER_FAILURES, FakeOpenAI, Hang, NoChoices
from tests.harness import API_KEY, FRIEND, OWNER, make_settings, started_app
from tests.talk import GROUP, say

HELLO = [ChatMessage(role="user", content="hello")]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # closed again: connection refused


async def failure_of(base_url: str, *, seconds: float = 5.0) -> LLMError:
    chat = OpenAIChat(
        base_url=base_url, api_key=API_KEY, model="fake-model", timeout=seconds, max_retries=0
    )
    try:
        with pytest.raises((LLMRejected, LLMUnavailable)) as raised:
            await chat.complete(HELLO)
    finally:
        await chat.close()
    return raised.value


@pytest.mark.parametrize(
    ("name", "cause", "kind"),
    [
        ("invalid-key", LLMCause.KEY_REJECTED, LLMRejected),
        ("insufficient-quota", LLMCause.OUT_OF_CREDIT, LLMRejected),
        ("insufficient-credits", LLMCause.OUT_OF_CREDIT, LLMRejected),
        ("credit-balance", LLMCause.OUT_OF_CREDIT, LLMRejected),
        ("model-not-found", LLMCause.MODEL_NOT_FOUND, LLMRejected),
        ("model-not-pulled", LLMCause.MODEL_NOT_FOUND, LLMRejected),
        ("rate-limited", LLMCause.RATE_LIMITED, LLMUnavailable),
        ("overloaded", LLMCause.OVERLOADED, LLMUnavailable),
        ("unavailable", LLMCause.OVERLOADED, LLMUnavailable),
        ("tools-unsupported", LLMCause.REFUSED, LLMRejected),
    ],
)
async def test_a_provider_failure_is_read_as_its_cause(
    fake_openai: FakeOpenAI, name: str, cause: LLMCause, kind: type[Exception]
) -> None:
    fake_openai.script(PROVIDER_FAILURES[name])

    error = await failure_of(fake_openai.base_url)

    assert (error.cause, type(error)) == (cause, kind)
    assert error.model == "fake-model"
    assert error.host == f"127.0.0.1:{fake_openai.port}"
    assert error.status == PROVIDER_FAILURES[name].status


async def test_a_timeout_a_refused_connection_and_a_wrong_path_are_causes_too(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(Hang())
    timed_out = await failure_of(fake_openai.base_url, seconds=0.3)
    refused = await failure_of(f"http://127.0.0.1:{closed_port()}/v1")
    no_v1 = await failure_of(fake_openai.base_url.removesuffix("/v1"))

    assert timed_out.cause is LLMCause.TIMED_OUT
    assert refused.cause is LLMCause.UNREACHABLE
    assert no_v1.cause is LLMCause.NO_ENDPOINT
    assert "BOT_LLM__BASE_URL (it usually ends in /v1)" in str(no_v1)


async def test_the_providers_words_are_kept_for_the_owner_without_the_key() -> None:
    async with FakeOpenAI() as model:
        model.script(PROVIDER_FAILURES["tools-unsupported"])
        refused = await failure_of(model.base_url)
    async with FakeOpenAI(api_key="sk-the-right-one") as strict:  # echoes our key in full
        rejected = await failure_of(strict.base_url)

    assert refused.detail == "registry.ollama.ai/library/gemma2:2b does not support tools"
    assert API_KEY not in rejected.detail and "[REDACTED]" in rejected.detail


# ----------------------------------------------------------------------------- what is said


@pytest.fixture
async def app(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    async with started_app(make_settings(workspace, telegram=None, openai=fake_openai)) as app:
        yield app


async def told(app: App, fake: FakeOpenAI, name: str, *, user: int, chat: int | None = None) -> str:
    fake.script(PROVIDER_FAILURES[name])
    [reply] = await say(app, "hello", user=user, chat=chat)
    return reply


async def test_a_revoked_key_tells_the_owner_which_setting_and_others_to_wait(
    app: App, fake_openai: FakeOpenAI
) -> None:
    host = f"127.0.0.1:{fake_openai.port}"

    owner = await told(app, fake_openai, "invalid-key", user=OWNER)
    friend = await told(app, fake_openai, "invalid-key", user=FRIEND)

    assert owner == (
        f"The model provider ({host}) rejected the API key (HTTP 401). Put a valid key in "
        "BOT_LLM__API_KEY and restart the bot."
    )
    assert friend == (
        "The assistant's model is unavailable right now: its owner has a setting to fix. "
        "Please try again later."
    )


async def test_no_credit_is_not_told_as_rephrasing(app: App, fake_openai: FakeOpenAI) -> None:
    host = f"127.0.0.1:{fake_openai.port}"

    owner = await told(app, fake_openai, "insufficient-quota", user=OWNER)
    friend = await told(app, fake_openai, "insufficient-credits", user=FRIEND)

    assert owner == (
        f"The model provider ({host}) says the account is out of credit or over its quota "
        "(HTTP 429). Add credit or raise the limit on the provider's billing page, or use "
        "another key in BOT_LLM__API_KEY."
    )
    assert friend == failures.OWNER_NEEDED
    assert "rephras" not in owner + friend


@pytest.mark.parametrize(
    ("name", "owner_words", "others"),
    [
        ("model-not-found", "has no model “fake-model”", failures.OWNER_NEEDED),
        ("model-not-pulled", "Check the name in BOT_LLM__MODEL", failures.OWNER_NEEDED),
        (
            "rate-limited",
            "is rate-limiting requests for fake-model (HTTP 429). Try again in 20 s",
            failures.BUSY,
        ),
        ("overloaded", "(fake-model at 127.0.0.1:", failures.BUSY),
        ("unavailable", "overloaded or failing on the provider's side (HTTP 503)", failures.BUSY),
        (
            "tools-unsupported",
            "The provider said: “registry.ollama.ai/library/gemma2:2b does not support tools”.",
            failures.REFUSED,
        ),
    ],
)
async def test_each_cause_in_the_owners_words_and_in_everyone_elses(
    app: App, fake_openai: FakeOpenAI, name: str, owner_words: str, others: str
) -> None:
    owner = await told(app, fake_openai, name, user=OWNER)
    friend = await told(app, fake_openai, name, user=FRIEND)

    assert owner_words in owner
    assert friend == others
    for internal in ("fake-model", "127.0.0.1", "BOT_", "HTTP"):
        assert internal not in friend


async def test_the_owner_in_a_group_hears_the_short_words(
    app: App, fake_openai: FakeOpenAI
) -> None:
    assert await told(app, fake_openai, "invalid-key", user=OWNER, chat=GROUP) == (
        failures.OWNER_NEEDED
    )


async def test_an_unreachable_or_slow_model_says_which_setting(workspace: Path) -> None:
    async with FakeOpenAI() as model:
        settings = make_settings(workspace, telegram=None, openai=model)
        llm = settings.llm.model_copy(update={"timeout": 0.3, "first_token_timeout": 0.3})
        async with started_app(settings.model_copy(update={"llm": llm})) as app:
            model.script(Hang())
            [slow] = await say(app, "hello")
        port = closed_port()
        llm = settings.llm.model_copy(update={"base_url": f"http://127.0.0.1:{port}/v1"})
        async with started_app(settings.model_copy(update={"llm": llm})) as app:
            [gone] = await say(app, "hello")

    assert slow == (
        f"The model (fake-model at 127.0.0.1:{model.port}) did not answer in time. Try again; "
        "a slow or local model may need a higher BOT_LLM__FIRST_TOKEN_TIMEOUT."
    )
    assert gone == (
        f"Cannot reach the model server at 127.0.0.1:{port}. Check that it is running and that "
        "BOT_LLM__BASE_URL is right."
    )


async def test_an_answer_with_no_choice_names_the_model_and_its_host(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(NoChoices())

    [owner] = await say(app, "hello")

    assert owner.startswith(f"The model (fake-model at 127.0.0.1:{fake_openai.port}) gave no ")


def test_an_error_without_a_host_is_worded_without_one() -> None:
    error = LLMUnavailable("no choices", model="test-model")

    assert failures.for_owner(error).startswith("The model (test-model) gave no usable answer.")
