"""Two holders of one workspace's documents, for the contract tests: two `FileDocuments` on
one folder, or two `PgDocuments` (each its own pool, as two replicas) on one database of its
own, or two `SplitDocuments` over those and the folder, as a replica's workspace has them (both
skipped without `MNEMO_TEST_PG`, saying why)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot.storage.files import Documents, FileDocuments
from tests.pg import pg_database

KINDS = ["files", "postgresql", "split"]
WORKSPACES = ["files", "split"]  # the documents a workspace has: embedded, replicated


@asynccontextmanager
async def two_documents(kind: str, root: Path) -> AsyncIterator[list[Documents]]:
    if kind == "files":
        yield [FileDocuments(), FileDocuments()]
        return
    from bot.replicas.documents import open_documents
    from bot.replicas.shared_documents import SplitDocuments

    async with pg_database() as url:
        held = [open_documents(url, root), open_documents(url, root)]
        for documents in held:
            documents.connect()
        try:
            if kind == "split":
                yield [SplitDocuments(shared, FileDocuments(), root) for shared in held]
            else:
                yield list(held)
        finally:
            for documents in held:
                documents.close()


@pytest.fixture(params=KINDS)
async def two(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[Documents]]:
    async with two_documents(request.param, tmp_path) as held:
        yield held
