"""The optional LightRAG backend: the owner's exchanges go to the server, other chats never do,
searches come back as cited hits, and a failing or hanging server never costs the reply."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import structlog
from pydantic import SecretStr

from bot import logs
from bot.app import App
from bot.errors import RagUnavailable
from bot.index.lightrag import HEADER, LightRagBackend, document_source, document_text
from bot.index.sources import Exchange
from bot.settings import RagSettings
from tests.fakes.lightrag_api import Document, FakeLightRag
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls
from tests.harness import FRIEND, OWNER, make_settings, started_app
from tests.talk import relevant_section, say, system_text

KEY = "lightrag-key-0123456789abcdef"
GROUP = -100777
TIMEOUT = 1.0
AT = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)


@pytest.fixture
async def fake_lightrag() -> AsyncIterator[FakeLightRag]:
    async with FakeLightRag(api_key=KEY) as fake:
        yield fake


def rag_settings(fake: FakeLightRag, *, key: str = KEY) -> RagSettings:
    return RagSettings(
        backend="lightrag",
        lightrag_url=fake.base_url,
        lightrag_api_key=SecretStr(key),
        lightrag_mode="mix",
        lightrag_timeout=TIMEOUT,
    )


@pytest.fixture
async def app(
    workspace: Path, fake_openai: FakeOpenAI, fake_lightrag: FakeLightRag
) -> AsyncIterator[App]:
    settings = make_settings(
        workspace, telegram=None, openai=fake_openai, rag=rag_settings(fake_lightrag)
    )
    async with started_app(settings) as app:
        yield app


@pytest.fixture
async def backend(fake_lightrag: FakeLightRag) -> AsyncIterator[LightRagBackend]:
    client = LightRagBackend(
        fake_lightrag.base_url, api_key=KEY, mode="mix", timeout=TIMEOUT, now=lambda: AT
    )
    yield client
    await client.stop()


@pytest.fixture
def log_text() -> Iterator[io.StringIO]:
    """Everything logged (ours and the libraries'), with no redaction to hide a leak."""
    buffer = io.StringIO()
    logs.configure(fmt="json", level="DEBUG", secrets=(), stream=buffer)
    yield buffer
    logging.getLogger().handlers.clear()
    structlog.reset_defaults()


def exchange(user: str, assistant: str, *, scope: str = "", turn: str = "t1") -> Exchange:
    return Exchange(f"telegram:{OWNER}", turn, user, assistant, scope, AT)


# ----------------------------------------------------------------------------- indexing


async def test_an_owner_exchange_is_sent_with_its_scope_and_time(
    app: App, fake_openai: FakeOpenAI, fake_lightrag: FakeLightRag
) -> None:
    fake_openai.script(Reply("Noted: the boat is called Marlin."))

    assert await say(app, "Our boat is called Marlin") == ["Noted: the boat is called Marlin."]

    [document] = fake_lightrag.documents
    header, _, body = document.text.partition("\n\n")
    assert header.startswith(HEADER) and "scope: owner (global memory)" in header
    assert f"time: {app.now().date()}" in header
    assert body == "User: Our boat is called Marlin\nAssistant: Noted: the boat is called Marlin."
    assert document.file_source.startswith(f"sessions/telegram%3A{OWNER}/")


async def test_group_and_other_users_exchanges_are_never_sent(
    app: App, fake_openai: FakeOpenAI, fake_lightrag: FakeLightRag
) -> None:
    fake_openai.script(Reply("Group answer"), Reply("Friend answer"))

    assert await say(app, "@mnemo the code is 4711", chat=GROUP, chat_type="group") == [
        "Group answer"
    ]
    assert await say(app, "my secret is 1234", user=FRIEND) == ["Friend answer"]

    assert fake_lightrag.documents == []
    assert fake_lightrag.calls == 0


async def test_the_backend_itself_refuses_a_chat_scoped_exchange(
    backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    sent = await backend.index_exchange(exchange("hi", "hello", scope="telegram:-100777"))

    assert sent is False and fake_lightrag.calls == 0


async def test_a_turn_sent_twice_is_stored_once(
    backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    assert await backend.index_exchange(exchange("hi", "hello"))
    assert await backend.index_exchange(exchange("hi", "hello"))

    assert [d.file_source for d in fake_lightrag.documents] == [
        document_source(exchange("hi", "hello"))
    ]


# ----------------------------------------------------------------------------- search


async def test_a_query_returns_cited_hits_without_the_header(
    backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    await backend.index_exchange(exchange("Our boat is called Marlin", "Nice name", turn="a"))
    await backend.index_exchange(exchange("The dentist is on Friday", "Noted", turn="b"))

    hits = await backend.search("boat called", scopes=("", "x"), k=5)

    [hit] = hits
    assert hit.citation == f"lightrag:sessions/telegram%3A{OWNER}/a"
    assert hit.text == "User: Our boat is called Marlin\nAssistant: Nice name"
    assert hit.kind == "lightrag" and hit.scope == "" and hit.at == AT
    query = fake_lightrag.queries[-1]
    assert query["mode"] == "mix" and query["only_need_context"] is True
    assert query["include_chunk_content"] is True and query["chunk_top_k"] == 5


async def test_hits_are_ranked_and_capped_at_k(
    backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    for turn, text in enumerate(["boat trip", "boat trip Marlin", "boat", "boat repair"]):
        await backend.index_exchange(exchange(text, "ok", turn=f"t{turn}"))

    hits = await backend.search("Marlin boat trip", scopes=("",), k=2)

    assert [h.path.rsplit("/", 1)[1] for h in hits] == ["t1", "t0"]
    assert hits[0].score > hits[1].score


async def test_a_chat_without_global_scope_gets_nothing_and_asks_nothing(
    backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    assert await backend.search("boat name", scopes=("telegram:-100777",), k=5) == []
    assert await backend.search("hi", scopes=("",), k=5) == []  # LightRAG wants 3+ characters

    assert fake_lightrag.calls == 0


async def test_an_answer_without_chunks_becomes_one_context_hit(
    backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    await backend.index_exchange(exchange("Our boat is called Marlin", "Nice"))
    fake_lightrag.chunk_content = False  # an older server

    [hit] = await backend.search("boat", scopes=("",), k=5)

    assert hit.citation == "lightrag:context"
    assert "Marlin" in hit.text and hit.at == AT


async def test_a_failing_server_gives_no_hits_and_the_search_does_not_raise(
    backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    fake_lightrag.fail(500)

    assert await backend.search("boat name", scopes=("",), k=5) == []


async def test_relevant_memory_in_the_owners_chat_includes_lightrag_hits(
    app: App, fake_openai: FakeOpenAI, backend: LightRagBackend
) -> None:
    await backend.index_exchange(exchange("The spare key is under the blue flowerpot", "Noted"))
    fake_openai.script(Reply("Under the flowerpot."))

    assert await say(app, "where is the spare key?") == ["Under the flowerpot."]

    section = relevant_section(system_text(fake_openai.last_request))
    assert f"\n## 2026-11-20\n- [lightrag:sessions/telegram%3A{OWNER}/t1] User: The spare key" in (
        section
    )


async def test_a_groups_prompt_never_asks_lightrag(
    app: App, fake_openai: FakeOpenAI, backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    await backend.index_exchange(exchange("The spare key is under the blue flowerpot", "Noted"))
    calls = fake_lightrag.calls
    fake_openai.script(Reply("No idea."))

    assert await say(app, "@mnemo where is the spare key?", chat=GROUP, chat_type="group") == [
        "No idea."
    ]

    assert "flowerpot" not in system_text(fake_openai.last_request)
    assert fake_lightrag.calls == calls


async def test_memory_search_in_the_owners_chat_includes_lightrag_hits(
    app: App, fake_openai: FakeOpenAI, fake_lightrag: FakeLightRag
) -> None:
    fake_openai.script(
        Reply("Nice name."),
        ToolCalls([("memory_search", {"query": "Marlin boat"})]),
        Reply("It is Marlin."),
    )
    await say(app, "Our boat is called Marlin")
    await fake_lightrag.wait_for_documents(1)
    source = f"sessions/telegram%3A{OWNER}/older"  # what the server alone holds
    fake_lightrag.documents.append(Document("The Marlin boat was bought in Brest.", source, "t2"))

    assert await say(app, "What was the boat called?") == ["It is Marlin."]

    tool_result = fake_openai.last_request["messages"][-1]["content"]
    assert f"lightrag:sessions/telegram%3A{OWNER}/" in tool_result
    assert fake_lightrag.queries[-1]["query"] == "Marlin boat"


async def test_memory_search_in_a_group_never_asks_lightrag(
    app: App, fake_openai: FakeOpenAI, fake_lightrag: FakeLightRag
) -> None:
    fake_openai.script(ToolCalls([("memory_search", {"query": "Marlin boat"})]), Reply("No idea."))

    assert await say(app, "@mnemo boat name?", chat=GROUP, chat_type="group") == ["No idea."]

    assert fake_lightrag.calls == 0


# ----------------------------------------------------------------------------- failures


async def test_a_failing_server_never_costs_the_reply_and_rests_after(
    app: App, fake_openai: FakeOpenAI, fake_lightrag: FakeLightRag
) -> None:
    fake_lightrag.fail(500)
    fake_openai.script(Reply("First"), Reply("Second"))

    assert await say(app, "one") == ["First"]
    assert fake_lightrag.calls == 3  # the call and two retries

    assert await say(app, "two") == ["Second"]
    assert fake_lightrag.calls == 3  # resting: the next turn does not wait on it again


async def test_a_health_probe_during_the_rest_ends_it(
    backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    fake_lightrag.fail(500)
    assert await backend.search("boat name", scopes=("",), k=5) == []
    rested = backend.resting
    fake_lightrag.recover()

    assert await backend.health() == "healthy"

    assert (rested, backend.resting) == (True, False)
    assert await backend.index_exchange(exchange("boat", "ok"))


async def test_one_5xx_is_retried_and_the_document_lands(
    backend: LightRagBackend, fake_lightrag: FakeLightRag
) -> None:
    fake_lightrag.fail(503, times=1)

    assert await backend.index_exchange(exchange("boat", "ok"))

    assert len(fake_lightrag.documents) == 1 and fake_lightrag.calls == 2


async def test_a_hanging_server_costs_at_most_its_timeout(
    app: App, fake_openai: FakeOpenAI, fake_lightrag: FakeLightRag
) -> None:
    fake_lightrag.hang()
    fake_openai.script(Reply("Still here"))
    started = time.monotonic()

    assert await say(app, "hello there") == ["Still here"]

    assert time.monotonic() - started < TIMEOUT + 1.5
    assert fake_lightrag.documents == []


async def test_an_unreachable_server_raises_rag_unavailable(fake_lightrag: FakeLightRag) -> None:
    url = fake_lightrag.base_url
    await fake_lightrag.stop()
    client = LightRagBackend(url, api_key=KEY, mode="mix", timeout=TIMEOUT, now=lambda: AT)
    try:
        with pytest.raises(RagUnavailable, match="ConnectError"):
            await client.index_exchange(exchange("boat", "ok"))
        with pytest.raises(RagUnavailable):
            await client.health()
    finally:
        await client.stop()


async def test_health_reports_the_servers_status(backend: LightRagBackend) -> None:
    assert await backend.health() == "healthy"


# ----------------------------------------------------------------------------- the API key


async def test_the_key_is_sent_in_x_api_key_and_never_logged(
    app: App, fake_openai: FakeOpenAI, fake_lightrag: FakeLightRag, log_text: io.StringIO
) -> None:
    fake_openai.script(Reply("Sure"), Reply("Again"))
    await say(app, "remember the boat")
    fake_lightrag.fail(500)
    await say(app, "and the car")

    assert all(headers.get("X-API-Key") == KEY for headers in fake_lightrag.headers)
    assert "HTTP 500" in log_text.getvalue()  # the failure was logged…
    assert KEY not in log_text.getvalue()  # …without the key


async def test_a_wrong_key_is_refused_and_still_not_logged(
    workspace: Path, fake_openai: FakeOpenAI, fake_lightrag: FakeLightRag, log_text: io.StringIO
) -> None:
    wrong = "wrong-key-9876543210"
    rag = rag_settings(fake_lightrag, key=wrong)
    settings = make_settings(workspace, telegram=None, openai=fake_openai, rag=rag)
    fake_openai.script(Reply("Fine"))

    async with started_app(settings) as app:
        assert await say(app, "hello") == ["Fine"]

    assert fake_lightrag.documents == []
    assert "HTTP 403" in log_text.getvalue() and wrong not in log_text.getvalue()


def test_the_document_text_carries_scope_and_time_in_its_header() -> None:
    text = document_text(exchange("a", "b"))

    assert text.splitlines()[:3] == [
        HEADER,
        "scope: owner (global memory)",
        "time: 2026-11-20T09:30:00+00:00",
    ]
