"""A database of its own per test, on the PostgreSQL server `MNEMO_TEST_PG` names (a libpq
connection string; `.ci/run` starts a throwaway server and sets it). Without it the replicated
mode's tests are skipped, saying why."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

SERVER = "MNEMO_TEST_PG"
UNSET = f"{SERVER} is unset: no PostgreSQL to test replicated mode on (.ci/run starts one)"


def server() -> str:
    conninfo = os.environ.get(SERVER, "")
    if not conninfo:
        pytest.skip(UNSET)
    return conninfo


@asynccontextmanager
async def pg_database() -> AsyncIterator[str]:
    """A new database's `postgresql://` URL, dropped (its connections ended) afterwards."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    admin = server()
    name = f"t_{uuid.uuid4().hex[:16]}"
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        await conn.execute(f"CREATE DATABASE {name}")
    parts = conninfo_to_dict(make_conninfo(admin, dbname=name))
    url = "postgresql://?" + "&".join(f"{key}={value}" for key, value in parts.items())
    try:
        yield url
    finally:
        async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
            await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
