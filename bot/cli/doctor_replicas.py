"""`python -m bot doctor`'s checks of replicated mode (`bot.replicas`): the database and the
webhook. Without `BOT_STORE__URL` and with polling, each says it is not used.

    ok    database: PostgreSQL 15.18, database mnemo as mnemo (tables there; 3 replicas, one secret)
    FAIL  database: the replicas do not share one webhook secret: host-b:8080 started with another …
    ok    webhook: Telegram posts to https://bot.example.org/telegram (0 updates waiting)
    warn  webhook: … its last delivery failed 2 min ago: "Wrong response from the webhook: 403 …"

The replicas' secrets are compared through `mnemo_replicas`, where each replica records a digest
of its own at start (`bot.replicas.database.record_replica`): a secret typed on each machine is
a secret per machine, and Telegram sends one, so the others answer its updates 403.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from bot.cli.findings import Finding, secret
from bot.errors import StoreAway
from bot.settings import Settings

if TYPE_CHECKING:
    from bot.channels.telegram.webhook import HookState

TOKEN_VAR = "BOT_TELEGRAM__TOKEN"
DATABASE_TIMEOUT = 10.0  # seconds to connect and ask
TELEGRAM_TIMEOUT = 20.0
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

    token = secret(telegram.token, TOKEN_VAR, "get one from @BotFather")
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
