"""`python -m bot doctor` against the fake Telegram and model servers: one line per check, the
fix on failure, no secret, exit 1 on any FAIL (not on a warning); and `python -m bot health`."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.cli.doctor import doctor
from bot.cli.health import health
from bot.settings import LLMSettings, RagSettings, Settings, TelegramSettings
from bot.storage.heartbeat import Heartbeat
from bot.storage.workspace import Workspace
from tests.fakes.lightrag_api import FakeLightRag
from tests.fakes.openai_api import Fail, FakeOpenAI, Reply, image_parts
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import (
    REPO,
    bot_env,
    make_settings,
    quiet_env,
    run_bot_command,
    start_bot_process,
)

REVOKED = "123456:revoked-Secret-42"
KEY = "sk-the-right-key-0123456789"
SMALL_MODEL = REPO / "tests" / "data" / "minilm-m2v-small"


@pytest.fixture
async def strict_openai() -> AsyncIterator[FakeOpenAI]:
    """A model server that wants `KEY` and answers every request "OK"."""
    async with FakeOpenAI(api_key=KEY) as fake:
        fake.answer_all(lambda request: Reply("OK"))
        yield fake


def settings_for(
    workspace: Path, bot_api: FakeTelegram, openai: FakeOpenAI, /, **changes: Any
) -> Settings:
    """Settings against the fakes (the model wants `KEY`), with `llm` and `telegram` changes
    and other sections replaced."""
    settings = make_settings(workspace, telegram=bot_api, openai=openai)
    llm = settings.llm.model_copy(update={"api_key": SecretStr(KEY), **changes.pop("llm", {})})
    tg = settings.telegram.model_copy(update=changes.pop("telegram", {}))
    return settings.model_copy(update={"llm": llm, "telegram": tg, **changes})


async def run_doctor(settings: Settings, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Doctor's lines by check name ("ok    model: …" → {"model": "ok    model: …"}); the exit
    code under "exit"."""
    code = await doctor(settings)
    said = capsys.readouterr().out.splitlines()
    lines = [line for line in said if line[:6] in ("ok    ", "warn  ", "FAIL  ")]  # no log lines
    found = {line[6:].split(":", 1)[0]: line for line in lines}
    assert len(found) == len(lines) == 10, lines
    return found | {"exit": str(code)}


async def test_all_good_is_ok_on_every_line(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = await run_doctor(settings_for(workspace, fake_telegram, strict_openai), capsys)

    assert found["exit"] == "0"
    assert found["workspace"] == f"ok    workspace: {workspace} (will be created)"
    assert (
        found["telegram"] == f"ok    telegram: @mnemo_test_bot (getMe at {fake_telegram.base_url})"
    )
    assert found["owners"] == "ok    owners: 1001"
    assert found["model"] == (
        "ok    model: fake-model answered; context window 32,768 tokens "
        "(assumed: not in config/models.json; set BOT_LLM__CONTEXT_WINDOW)"
    )
    assert found["embedder"].startswith("ok    embedder: none")
    assert found["lightrag"].startswith("ok    lightrag: not used")
    assert found["database"].startswith("ok    database: not used")
    assert found["webhook"].startswith("ok    webhook: not used")
    assert strict_openai.last_request["max_tokens"] == 1  # a one-token request
    assert not await asyncio.to_thread(workspace.exists)  # doctor creates nothing


async def test_the_window_says_where_it_comes_from(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = settings_for(workspace, fake_telegram, strict_openai, llm={"context_window": 8192})

    found = await run_doctor(settings, capsys)

    assert found["model"].endswith("context window 8,192 tokens (set by BOT_LLM__CONTEXT_WINDOW)")


async def test_a_rejected_token_says_where_to_get_one_and_never_shows_it(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = settings_for(
        workspace, fake_telegram, strict_openai, telegram={"token": SecretStr(REVOKED)}
    )

    found = await run_doctor(settings, capsys)

    assert found["exit"] == "1"
    assert found["telegram"] == (
        "FAIL  telegram: Telegram rejected the bot token: get a new one from @BotFather, then "
        "run make setup"
    )
    assert found["model"].startswith("ok")
    assert REVOKED.split(":")[1] not in str(found)


async def test_a_missing_token_says_where_to_get_one(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = settings_for(workspace, fake_telegram, strict_openai, telegram={"token": None})

    found = await run_doctor(settings, capsys)

    assert found["telegram"] == (
        "FAIL  telegram: no bot token yet (@BotFather gives you one): run make setup (or set "
        "BOT_TELEGRAM__TOKEN in .env)"
    )
    assert found["exit"] == "1"


async def test_one_missing_key_is_one_failure_that_says_to_run_setup(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seeing = settings_for(workspace, fake_telegram, strict_openai, llm={"api_key": None})
    settings = seeing.model_copy(
        update={"media": seeing.media.model_copy(update={"vision": True})}
    )  # voice notes and photos would use the model's key too

    found = await run_doctor(settings, capsys)

    failed = [line for line in found.values() if line.startswith("FAIL")]
    assert failed == [
        "FAIL  model: no API key for the model yet (any text will do for a model on your own "
        "computer): run make setup (or set BOT_LLM__API_KEY in .env)"
    ]
    not_checked = "not checked: {} use the model's API key, which is missing (see model)"
    assert found["transcription"] == "warn  transcription: " + not_checked.format("voice notes")
    assert found["vision"] == "warn  vision: " + not_checked.format("photos")
    assert "put it in .env" not in str(found)


@pytest.mark.parametrize(
    ("owners", "said"),
    [
        ((), "no owner set (BOT_TELEGRAM__OWNER_IDS is empty)"),
        ((123456789,), "BOT_TELEGRAM__OWNER_IDS holds the example id 123456789"),
    ],
    ids=["empty", "placeholder"],
)
async def test_no_real_owner_is_a_warning_that_says_how_to_find_ones_id(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    owners: tuple[int, ...],
    said: str,
) -> None:
    settings = settings_for(workspace, fake_telegram, strict_openai, telegram={"owner_ids": owners})

    found = await run_doctor(settings, capsys)

    assert found["owners"].startswith(f"warn  owners: {said}")
    assert "@userinfobot" in found["owners"] and "/claim" in found["owners"]
    assert found["exit"] == "0"  # a warning, not a failure


async def test_a_rejected_key_fails_the_model_check(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wrong = "sk-wrong-key-9876543210"
    settings = settings_for(
        workspace, fake_telegram, strict_openai, llm={"api_key": SecretStr(wrong)}
    )

    found = await run_doctor(settings, capsys)

    assert found["model"] == (
        f"FAIL  model: the model at {strict_openai.base_url} rejected the API key (HTTP 401): "
        "check BOT_LLM__API_KEY"
    )
    assert found["exit"] == "1"
    assert wrong not in str(found)


async def test_an_unknown_model_says_which_setting_to_check(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    strict_openai.script(
        Fail(
            404,
            "The model `gpt-9` does not exist or you do not have access to it.",
            code="model_not_found",
        )
    )
    settings = settings_for(workspace, fake_telegram, strict_openai, llm={"model": "gpt-9"})

    found = await run_doctor(settings, capsys)

    assert found["model"].startswith(
        f"FAIL  model: the model at {strict_openai.base_url} has no such model (HTTP 404): "
        "check BOT_LLM__MODEL"
    )
    assert "gpt-9" in found["model"]  # in the provider's words


async def test_an_unreachable_model_says_to_check_the_url(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"  # closed again: refused
    settings = settings_for(workspace, fake_telegram, strict_openai, llm={"base_url": url})

    found = await run_doctor(settings, capsys)

    assert found["model"] == (
        f"FAIL  model: cannot reach the model at {url}: check the network and BOT_LLM__BASE_URL"
    )


async def test_a_workspace_that_is_a_file_fails_with_the_fix(
    tmp_path: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    not_a_folder = tmp_path / "ws"
    not_a_folder.write_text("oops")

    found = await run_doctor(settings_for(not_a_folder, fake_telegram, strict_openai), capsys)

    assert found["workspace"] == (
        f"FAIL  workspace: workspace {not_a_folder} is not a folder: set BOT_WORKSPACE to a folder"
    )
    assert found["exit"] == "1"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a read-only folder all the same")
async def test_an_unwritable_workspace_says_so_and_how_to_fix_it(
    tmp_path: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    locked = tmp_path / "ws"
    (locked / "memory").mkdir(parents=True)
    locked.chmod(0o500)
    try:
        found = await run_doctor(settings_for(locked, fake_telegram, strict_openai), capsys)
    finally:
        locked.chmod(0o700)

    assert found["workspace"] == (
        f"FAIL  workspace: workspace folder {locked} is not writable: give it to this user "
        f"(uid {os.getuid()}): `sudo chown -R {os.getuid()}:{os.getgid()} {locked}`, or set "
        "BOT_WORKSPACE to a folder you own"
    )
    assert found["model"].startswith("ok")  # the model is not blamed for the folder
    assert found["exit"] == "1"


async def test_the_embedder_is_loaded_and_used(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rag = RagSettings(embedder="model2vec", model2vec_path=SMALL_MODEL)
    found = await run_doctor(settings_for(workspace, fake_telegram, strict_openai, rag=rag), capsys)

    assert found["embedder"].startswith("ok    embedder: model2vec:minilm-m2v-small:")
    assert found["embedder"].endswith("dimensions)")


async def test_a_missing_embedder_model_fails_with_the_variable(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rag = RagSettings(embedder="model2vec", model2vec_path=workspace / "nothing-here")
    found = await run_doctor(settings_for(workspace, fake_telegram, strict_openai, rag=rag), capsys)

    assert found["embedder"].startswith("FAIL  embedder: BOT_RAG__MODEL2VEC_PATH")
    assert found["exit"] == "1"


async def test_lightrag_is_reached_when_enabled(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with FakeLightRag() as server:
        rag = RagSettings(backend="lightrag", lightrag_url=server.base_url, lightrag_timeout=2)
        up = await run_doctor(
            settings_for(workspace, fake_telegram, strict_openai, rag=rag), capsys
        )
    down = await run_doctor(settings_for(workspace, fake_telegram, strict_openai, rag=rag), capsys)

    assert up["lightrag"] == f"ok    lightrag: healthy at {server.base_url}"
    assert down["lightrag"].startswith("FAIL  lightrag: LightRAG GET /health")
    assert down["exit"] == "1"


async def test_the_command_exits_non_zero_on_a_failure_only(
    tmp_path: Path, fake_telegram: FakeTelegram, strict_openai: FakeOpenAI
) -> None:
    env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, strict_openai))
    env |= {"BOT_LLM__API_KEY": KEY, "BOT_TELEGRAM__OWNER_IDS": "[123456789]"}

    good, said = await run_bot_command(env, tmp_path, "doctor")
    env["BOT_LLM__API_KEY"] = "sk-not-it-0000000000"
    bad, told = await run_bot_command(env, tmp_path, "doctor")

    assert (good, bad) == (0, 1), said
    assert "warn  owners:" in said
    for output in (said, told):  # doctor's own lines only: no log line (llm_error …) among them
        assert [line[:6] in ("ok    ", "warn  ", "FAIL  ") for line in output.splitlines()] == [
            True
        ] * 10, output


# ----------------------------------------------------------------------------- health


def test_health_wants_a_recent_heartbeat(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=workspace,
        telegram=TelegramSettings(poll_timeout=30),
        llm=LLMSettings(),
    )
    beat = Heartbeat(Workspace(workspace).heartbeat_path)

    none_yet = health(settings)
    beat.beat()
    fresh = health(settings)
    long_ago = time.time() - 30 - 61
    os.utime(beat.path, (long_ago, long_ago))
    stale = health(settings)

    assert (none_yet, fresh, stale) == (1, 0, 1)
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("unhealthy: no heartbeat")
    assert said[1].startswith("healthy: the bot polled 0 s ago")
    assert said[2].startswith("unhealthy: the bot last polled 91 s ago")


async def test_the_running_bot_is_healthy(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, fake_openai))
    before, _ = await run_bot_command(env, tmp_path, "health")
    process = start_bot_process(env, tmp_path, tmp_path / "bot.log")
    try:
        await fake_telegram.wait_for_poll(timeout=20)
        await fake_telegram.wait_for_poll(timeout=20)  # one poll answered, the next asked
        during, said = await run_bot_command(env, tmp_path, "health")
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 10)

    assert (before, during) == (1, 0), said


async def test_a_hub_model_not_fetched_yet_is_a_warning_that_says_when_it_will_be(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rag = RagSettings(embedder="model2vec", model2vec_model="minishlab/potion-retrieval-32M")
    found = await run_doctor(settings_for(workspace, fake_telegram, strict_openai, rag=rag), capsys)

    assert found["embedder"].startswith(
        "warn  embedder: model2vec minishlab/potion-retrieval-32M is not cached yet: the bot "
        "fetches it from https://huggingface.co on its first start"
    )
    assert found["exit"] == "0"
    assert not (workspace / "models").exists()  # doctor fetches nothing


async def test_a_cached_hub_model_is_loaded_and_said_where_it_is(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cached = workspace / "models" / "tests--small"
    shutil.copytree(SMALL_MODEL, cached)
    rag = RagSettings(embedder="model2vec", model2vec_model="tests/small")
    found = await run_doctor(settings_for(workspace, fake_telegram, strict_openai, rag=rag), capsys)

    assert found["embedder"].startswith("ok    embedder: model2vec:tests--small:")
    assert found["embedder"].endswith(f"dimensions; tests/small cached in {cached})")


async def test_an_embeddings_endpoint_is_used_and_named(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rag = RagSettings(embedder="openai", embedding_model="text-embedding-3-small")
    found = await run_doctor(settings_for(workspace, fake_telegram, strict_openai, rag=rag), capsys)

    assert found["embedder"].startswith("ok    embedder: openai:text-embedding-3-small (")
    assert [r["input"] for r in strict_openai.embedding_requests] == [["doctor"]]
    assert KEY not in found["embedder"]


# ----------------------------------------------------------------------------- model name, media


async def test_an_empty_model_name_fails(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = settings_for(workspace, fake_telegram, strict_openai, llm={"model": " "})

    found = await run_doctor(settings, capsys)

    assert found["model"] == (
        "FAIL  model: BOT_LLM__MODEL is empty: set the model's name, e.g. gpt-4o-mini"
    )
    assert found["exit"] == "1"


async def test_transcription_hears_a_test_recording(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    strict_openai.transcribe("")
    settings = settings_for(workspace, fake_telegram, strict_openai)

    found = await run_doctor(settings, capsys)

    assert found["transcription"] == (
        f"ok    transcription: whisper-1 heard a test recording at {strict_openai.base_url}"
    )
    (asked,) = strict_openai.transcription_requests
    assert asked["model"] == "whisper-1"


async def test_a_transcription_service_that_fails_is_a_warning_that_says_what_to_set(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    strict_openai.transcribe(Fail(404, "no such model", code="model_not_found"))
    settings = settings_for(workspace, fake_telegram, strict_openai)

    found = await run_doctor(settings, capsys)

    assert found["transcription"].startswith(
        f"warn  transcription: whisper-1 at {strict_openai.base_url}: the transcription service "
        "has no such endpoint or model (HTTP 404); voice notes will not be heard"
    )
    assert "BOT_MEDIA__TRANSCRIPTION_MODEL= (empty) turns voice notes off" in found["transcription"]
    assert found["exit"] == "0"


async def test_transcription_turned_off_is_said(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = settings_for(workspace, fake_telegram, strict_openai)
    media = settings.media.model_copy(update={"transcription_model": ""})

    found = await run_doctor(settings.model_copy(update={"media": media}), capsys)

    assert found["transcription"].startswith("ok    transcription: off (")
    assert strict_openai.transcription_requests == []


async def test_vision_shows_the_model_a_picture_or_says_it_is_off(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = settings_for(workspace, fake_telegram, strict_openai)
    seeing = settings.model_copy(
        update={"media": settings.media.model_copy(update={"vision": True})}
    )

    off = await run_doctor(settings, capsys)
    on = await run_doctor(seeing, capsys)

    assert off["vision"].startswith("ok    vision: off: fake-model is not said to read images")
    assert on["vision"] == (
        "ok    vision: fake-model was shown a picture and answered (BOT_MEDIA__VISION)"
    )
    ((_, url),) = image_parts(strict_openai.last_request)
    assert url.startswith("data:image/png;base64,")


async def test_a_model_that_refuses_a_picture_is_a_warning(
    workspace: Path,
    fake_telegram: FakeTelegram,
    strict_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    strict_openai.script(Reply("OK"), Fail(400, "image input is not supported"))
    settings = settings_for(workspace, fake_telegram, strict_openai)
    seeing = settings.model_copy(
        update={"media": settings.media.model_copy(update={"vision": True})}
    )

    found = await run_doctor(seeing, capsys)

    assert found["vision"].startswith("warn  vision: fake-model refused a picture (")
    assert found["vision"].endswith("set BOT_MEDIA__VISION=false if it does not read images")
    assert found["exit"] == "0"
