"""`python -m bot doctor`: is everything the bot depends on there?

`doctor` checks each part once, one line each, the fix on the line when something is wrong:

    ok    workspace: /srv/mnemo/workspace (writable)
    ok    telegram: @my_mnemo_bot (getMe at https://api.telegram.org/bot)
    ok    database: PostgreSQL 15.18, database mnemo as mnemo (tables there; 3 replicas recorded, …)
    ok    webhook: Telegram posts to https://bot.example.org/telegram (0 updates waiting)
    warn  owners: BOT_TELEGRAM__OWNER_IDS holds the example id 123456789: …how to find yours
    ok    model: gpt-4o-mini answered; context window 128,000 tokens (from config/models.json)
    ok    transcription: whisper-1 heard a test recording at https://api.openai.com/v1
    ok    vision: gpt-4o-mini was shown a picture and answered (config/models.json)
    ok    embedder: none (keyword search only)
    ok    lightrag: healthy at http://lightrag:9621          (only with BOT_RAG__BACKEND=lightrag)

Exit status 1 when any check FAILs (a warning does not). No line carries a secret: each goes
through `bot.logs.Scrubber`.

(`python -m bot health`, Docker's check that the running bot polls, is `bot.cli.health`.)
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bot import logs, shell
from bot.app.store import roster_only
from bot.channels.telegram import check_token
from bot.channels.telegram.errors import startup_error
from bot.cli.doctor_media import check_transcription, check_vision
from bot.cli.findings import Finding
from bot.cli.findings import secret as _secret
from bot.errors import ConfigError, MnemoError, StartupError, StoreAway
from bot.index.embedding import is_cached, model_folder
from bot.index.lightrag import LightRagBackend
from bot.llm.embeddings import embedder_loader
from bot.llm.failures import API_KEY_VAR
from bot.llm.openai_chat import OpenAIChat
from bot.llm.windows import ModelWindows
from bot.models import ChatMessage
from bot.settings import Settings, secret_values
from bot.storage.workspace import Workspace
from bot.turn.pairing import PLACEHOLDER_OWNER, grouped, owners

if TYPE_CHECKING:
    from bot.channels.telegram.webhook import HookState

TOKEN_VAR = "BOT_TELEGRAM__TOKEN"
TELEGRAM_TIMEOUT = 20.0
MODEL_TIMEOUT = 60.0  # a local server may still be loading its model
NO_TOKEN = "no bot token yet (@BotFather gives you one)"
NO_KEY = "no API key for the model yet (any text will do for a model on your own computer)"


def find_your_id() -> str:
    return (
        f"run {shell.command('pair list')} for the claim code and send it to your bot as "
        "/claim CODE; or set BOT_TELEGRAM__OWNER_IDS=[<your id>] (message @userinfobot to "
        "learn it)"
    )


Check = Callable[[Settings], Awaitable[Finding]]
Print = Callable[[str], None]


def command(settings: Settings, args: argparse.Namespace, out: Print) -> int:
    return asyncio.run(doctor(settings))


async def doctor(settings: Settings) -> int:
    """Run every check; print one scrubbed line each; 1 if any failed."""
    failed = 0
    async for name, finding in findings(settings):
        failed += finding.level == "FAIL"
        print(f"{finding.level:<5} {name}: {finding.text}")
    return 1 if failed else 0


async def findings(settings: Settings) -> AsyncIterator[tuple[str, Finding]]:
    """Each check's name and finding, its text scrubbed of every secret (the memory page's
    Health shows them too)."""
    scrub = logs.Scrubber(secret_values(settings))
    for name, check in CHECKS:
        try:
            finding = await check(settings)
        except Exception as exc:
            finding = Finding("FAIL", what_failed(exc, settings))
        yield name, Finding(finding.level, scrub(finding.text)[:400])


# ----------------------------------------------------------------------------- the checks


async def check_workspace(settings: Settings) -> Finding:
    workspace = Workspace(settings.workspace)
    if (problem := await asyncio.to_thread(workspace.unwritable)) is not None:
        return Finding("FAIL", problem)
    state = "writable" if settings.workspace.exists() else "will be created"
    return Finding("ok", f"{settings.workspace.absolute()} ({state})")


async def check_telegram(settings: Settings) -> Finding:
    token = _secret(settings.telegram.token, TOKEN_VAR, NO_TOKEN)
    base_url = settings.telegram.base_url
    try:
        async with asyncio.timeout(TELEGRAM_TIMEOUT):
            username = await check_token(token, base_url, settings.telegram.proxy)
    except TimeoutError:
        raise StartupError(
            f"Telegram did not answer within {TELEGRAM_TIMEOUT:g} s at {base_url}: check the "
            "network and BOT_TELEGRAM__BASE_URL"
        ) from None
    return Finding("ok", f"{username} (getMe at {base_url})")


async def check_owners(settings: Settings) -> Finding:
    """Owners set in the settings or claimed with /claim (`bot.turn.pairing.owners`), in the
    roster the bot uses (the workspace's, or the replicas' database)."""
    async with roster_only(settings, Workspace(settings.workspace)) as roster:
        found = owners(settings.telegram.owner_ids, roster.current())
    if found.any:
        claimed = [f"{owner} (claimed)" for owner in found.claimed]
        return Finding("ok", ", ".join([*map(str, found.configured), *claimed]))
    if found.placeholder:
        return Finding(
            "warn",
            f"BOT_TELEGRAM__OWNER_IDS holds the example id {PLACEHOLDER_OWNER}, nobody's: "
            f"{find_your_id()}",
        )
    if found.claim_code:
        return Finding(
            "warn",
            f"no owner yet: send /claim {grouped(found.claim_code)} to your bot in a private "
            "chat (the code is kept until used)",
        )
    return Finding("warn", f"no owner set (BOT_TELEGRAM__OWNER_IDS is empty): {find_your_id()}")


async def check_model(settings: Settings) -> Finding:
    """A one-token request; the window the bot will assume for the model, and from where."""
    api_key = _secret(settings.llm.api_key, API_KEY_VAR, NO_KEY)
    model = settings.llm.model
    if not model.strip():
        raise ConfigError("BOT_LLM__MODEL is empty: set the model's name, e.g. gpt-4o-mini")
    windows = ModelWindows.from_settings(settings, Workspace(settings.workspace))
    llm = OpenAIChat.from_settings(settings.llm, api_key, windows)
    try:
        async with asyncio.timeout(MODEL_TIMEOUT):
            await llm.complete([ChatMessage(role="user", content="Say OK.")], max_tokens=1)
    except TimeoutError:
        raise StartupError(
            f"the model at {settings.llm.base_url} did not answer within {MODEL_TIMEOUT:g} s: "
            "is it running? Check BOT_LLM__BASE_URL"
        ) from None
    finally:
        await llm.close()
    window = windows.for_model(model)
    return Finding(
        "ok", f"{model} answered; context window {window:,} tokens ({windows.source(model)})"
    )


async def check_embedder(settings: Settings) -> Finding:
    rag = settings.rag
    if not rag.enabled or rag.embedder == "none":
        return Finding("ok", "none (keyword search only; BOT_RAG__EMBEDDER to add one)")
    models_dir = Workspace(settings.workspace).models_dir
    source = ""
    if rag.embedder == "model2vec" and rag.model2vec_path is None:
        folder = model_folder(models_dir, rag.model2vec_model)
        if not is_cached(folder):
            return Finding("warn", _not_fetched(rag.model2vec_model, rag.model2vec_hub, folder))
        source = f"; {rag.model2vec_model} cached in {folder}"
    key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
    load = embedder_loader(
        rag, llm_base_url=settings.llm.base_url, api_key=key, models_dir=models_dir
    )
    embedder = await asyncio.to_thread(load, settings.llm.timeout)
    if embedder is None:  # a cached model that went away meanwhile
        return Finding("warn", "none could be loaded: keyword search only (see the log)")
    vectors = await asyncio.to_thread(embedder.embed, ["doctor"])
    return Finding("ok", f"{embedder.name} ({len(vectors[0])} dimensions{source})")


def _not_fetched(model: str, hub: str, folder: Path) -> str:
    return (
        f"model2vec {model} is not cached yet: the bot fetches it from {hub} on its first "
        f"start (network needed once) into {folder}; until then keyword search only"
    )


async def check_lightrag(settings: Settings) -> Finding:
    server = LightRagBackend.from_settings(settings.rag, lambda: datetime.now(UTC))
    if server is None:
        return Finding("ok", "not used (BOT_RAG__BACKEND is not lightrag)")
    try:
        status = await server.health()
    finally:
        await server.stop()
    return Finding("ok", f"{status} at {settings.rag.lightrag_url}")


# ----------------------------------------------------------------------------- replicated mode
# The database and the webhook (`bot.replicas`); without `BOT_STORE__URL` and with polling each
# says it is not used. The replicas' secrets are compared through `mnemo_replicas`, where each
# replica records a digest of its own at start (`bot.replicas.database.record_replica`): a
# secret typed on each machine is a secret per machine, and Telegram sends one, so the others
# answer its updates 403.

DATABASE_TIMEOUT = 10.0  # seconds to connect and ask
RECENT_ERROR = 3600  # seconds: a delivery error older than this is history, not a warning


async def check_database(settings: Settings) -> Finding:
    if settings.store.url is None:
        return Finding("ok", "not used (one process, files: BOT_STORE__URL is unset)")
    from bot.replicas.database import about

    try:
        async with asyncio.timeout(DATABASE_TIMEOUT):
            found = await about(settings.store.url.get_secret_value())
    except (StoreAway, TimeoutError) as exc:
        return Finding("FAIL", f"cannot reach the database of BOT_STORE__URL: {exc or 'timeout'}")
    where = f"PostgreSQL {found.version}, database {found.database} as {found.user}"
    if not found.made and not found.can_make_tables:
        user, database = found.user, found.database
        return Finding(
            "FAIL",
            f"{where} may not create tables in schema public, and they are not made yet: "
            f"make {user} the owner (ALTER DATABASE {database} OWNER TO {user}; "
            f"ALTER SCHEMA public OWNER TO {user})",
        )
    return _agreeing(settings, where, found.secrets, made=found.made)


def _agreeing(
    settings: Settings, where: str, secrets: dict[str, str | None], *, made: bool
) -> Finding:
    """The database's line: FAIL when the replicas recorded different webhook secrets (or
    another one than this shell's settings)."""
    from bot.replicas.database import secret_digest

    mine = settings.telegram.webhook_secret
    digests = {digest for digest in secrets.values() if digest is not None}
    if mine is not None:
        digests.add(secret_digest(mine.get_secret_value()))
    if len(digests) > 1:
        here = secret_digest(mine.get_secret_value()) if mine is not None else None
        others = [name for name, digest in secrets.items() if digest != here] or list(secrets)
        return Finding(
            "FAIL",
            f"the replicas do not share one webhook secret: {', '.join(others)} started with "
            "another than BOT_TELEGRAM__WEBHOOK_SECRET here (Telegram sends one secret: "
            "updates reaching them are refused with 403). Put the same secret on every "
            "replica (docs/replicas.md) and restart them",
        )
    state = "tables there" if made else "tables made by the first replica to start"
    replicas = f"; {len(secrets)} replica{'s' * (len(secrets) != 1)} recorded" if made else ""
    agreed = ", one secret" if secrets and digests else ""
    return Finding("ok", f"{where} ({state}{replicas}{agreed})")


async def check_webhook(settings: Settings) -> Finding:
    telegram = settings.telegram
    if telegram.mode != "webhook":
        return Finding("ok", "not used (polling: BOT_TELEGRAM__MODE is not webhook)")
    from bot.channels.telegram.webhook import webhook_info

    token = _secret(telegram.token, TOKEN_VAR, "get one from @BotFather")
    async with asyncio.timeout(TELEGRAM_TIMEOUT):
        info = await webhook_info(token, telegram.base_url, telegram.proxy)
    return _webhook_finding(telegram.webhook_url or "", info)


def _webhook_finding(wanted: str, info: HookState) -> Finding:
    waiting = f"{info.pending} update{'s' * (info.pending != 1)} waiting"
    if not info.url:
        return Finding("warn", f"no webhook set yet ({waiting}): a replica sets it when it starts")
    if info.url != wanted:
        return Finding(
            "warn",
            f"Telegram posts to {info.url}, not BOT_TELEGRAM__WEBHOOK_URL {wanted} ({waiting}): "
            "a replica sets it again when it starts",
        )
    error = _recent_error(info)
    if error is not None:
        return Finding("warn", f"Telegram posts to {info.url} ({waiting}); {error}")
    https = "" if wanted.startswith("https://") else " (Telegram posts only to https://)"
    return Finding("warn" if https else "ok", f"Telegram posts to {info.url} ({waiting}){https}")


def _recent_error(info: HookState) -> str | None:
    when, message = info.last_error_at, info.last_error
    if when is None or not message:
        return None
    ago = time.time() - when
    if ago > RECENT_ERROR:
        return None
    return f'its last delivery failed {ago / 60:.0f} min ago: "{message}"'


CHECKS: tuple[tuple[str, Check], ...] = (
    ("workspace", check_workspace),
    ("telegram", check_telegram),
    ("database", check_database),
    ("webhook", check_webhook),
    ("owners", check_owners),
    ("model", check_model),
    ("transcription", check_transcription),
    ("vision", check_vision),
    ("embedder", check_embedder),
    ("lightrag", check_lightrag),
)


# ----------------------------------------------------------------------------- helpers


def what_failed(exc: Exception, settings: Settings) -> str:
    """A failed check as one line: what to fix when we know, else the error's type and text."""
    known = startup_error(exc, base_url=settings.telegram.base_url)
    if known is not None or isinstance(exc, MnemoError):
        return str(known or exc)
    return f"{type(exc).__name__}: {exc}"
