"""A database of its own per test, on the PostgreSQL server `MNEMO_TEST_PG` names (a libpq
connection string; `.ci/run` starts a throwaway server and sets it). Without it the replicated
mode's tests are skipped, saying why. A test that stops the server takes one of its own
(`private_server`), skipped only where the machine has no `pg_ctl`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

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


def pg_bin() -> Path | None:
    """The folder of the machine's `pg_ctl` and `initdb` (Debian keeps them off PATH)."""
    found = shutil.which("pg_config")
    if found:
        folder = subprocess.run([found, "--bindir"], capture_output=True, text=True).stdout
        if (Path(folder.strip()) / "pg_ctl").exists():
            return Path(folder.strip())
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


NO_PG_CTL = "no pg_ctl on this machine: the test needs a PostgreSQL server of its own to restart"


class PrivateServer:
    """A PostgreSQL server of the test's own, on a unix socket in a tmp folder (never the
    shared one `MNEMO_TEST_PG` names: the test stops and restarts it). Run as the `postgres`
    user when we are root (PostgreSQL refuses root), as `.ci/run` does."""

    def __init__(self, binaries: Path, folder: Path) -> None:
        self.binaries = binaries
        self.folder = folder
        self.data = folder / "data"
        self.conninfo = f"host={folder} user=postgres dbname=postgres"
        self.url = f"postgresql://?host={folder}&user=postgres&dbname=postgres"

    def _run(self, tool: str, *arguments: str) -> None:
        command = [str(self.binaries / tool), *arguments]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def init(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        options = f"-c listen_addresses='' -k {self.folder} -c max_connections=100 -c fsync=off"
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.folder / "log"),
            "-w",
            "-o",
            options,
            "start",
        )

    def stop(self) -> None:
        """Fast shutdown: sessions are ended, what was committed is kept."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")


@asynccontextmanager
async def private_server() -> AsyncIterator[PrivateServer]:
    """A fresh server, stopped and removed afterwards; the test is skipped without pg_ctl."""
    binaries = pg_bin()
    if binaries is None:
        pytest.skip(NO_PG_CTL)
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: PostgreSQL refuses to run as root")
    folder = Path(tempfile.mkdtemp(prefix="mnemo-pg-"))  # short: a socket path has 107 bytes
    server = PrivateServer(binaries, folder)
    try:
        await asyncio.to_thread(server.init)
        await asyncio.to_thread(server.start)
        yield server
    finally:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            await asyncio.to_thread(server.stop)
        shutil.rmtree(folder, ignore_errors=True)


async def given_away(pool: Any, inbound_id: str) -> None:
    """What the stall sweep does to a message whose lease ran out (`bot.replicas.lease`): the
    take holding it is fenced off, the next take need not wait."""
    from bot.replicas.lease import fence_off

    async with pool.connection() as conn:
        await fence_off(conn, inbound_id)
