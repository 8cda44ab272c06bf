"""Documents: a text file or a PDF reaches the model with its caption (this turn only: the
session and the daily note keep `[document: name, size] caption`), its text is kept beside it and
found later with a citation, in its chat's scope alone; what cannot be read is one line; a long
text is cut and says so; an image sent as a file is a photo; the console's `/file` works too."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from bot.channels.console import ConsoleChannel
from bot.llm.tokens import TokenCounter
from bot.media.document import CUT, DOCUMENT_SHARE, NO_TEXT, UNSUPPORTED, bounded
from bot.media.extraction import BROKEN, EMPTY, ENCRYPTED, NO_TEXT_LAYER, NOT_TEXT, kind_of
from bot.media.files import TOO_LARGE
from bot.settings import MediaSettings
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls, image_parts
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot, small_window_settings, started_app
from tests.pdfs import locked_pdf, scanned_pdf, text_pdf
from tests.talk import say, session, tool_result

MB = 1024 * 1024
GROUP = -100600
LIST = b"oat milk\nrye bread\nthree lemons\n"
REPORT = text_pdf(
    "Quarterly report\nRevenue grew by twelve percent.",
    "The spare key is under the blue flowerpot.",
)


def notes(memory: Path) -> str:
    return "".join(path.read_text() for path in memory.glob("????-??-??.md"))


def said(request: dict[str, Any]) -> str:
    """The user's message as a request carried it."""
    message = request["messages"][-1]
    assert message["role"] == "user"
    return str(message["content"])


def searched(request: dict[str, Any]) -> str:
    """What `memory_search` answered, as the model got it."""
    answer = request["messages"][-1]
    assert answer["role"] == "tool"
    return str(answer["content"])


async def test_a_text_file_and_its_caption_reach_the_model_and_memory_keeps_one_line(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    fake_openai.script(Reply("Milk, bread and lemons."), Reply("A shopping list."))
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(
            OWNER, OWNER, "document", data=LIST, file_name="list.txt", caption="what do I need?"
        )
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(OWNER, OWNER, "what did I send?")
        await fake_telegram.wait_for_messages(OWNER, 2)

    first, later = fake_openai.requests
    line = "[document: list.txt, 3 lines] what do I need?"
    assert said(first).startswith(f"{line}\n\n--- list.txt (3 lines); its text: ---\noat milk\n")
    assert "three lemons\n--- end of list.txt ---" in said(first)
    assert {"role": "user", "content": line} in later["messages"]  # the text: this turn only
    assert session(workspace)["messages"][0]["content"] == line
    assert f"User: {line} | Assistant: Milk, bread and lemons." in notes(workspace / "memory")
    kept, text = sorted((workspace / "memory" / "files").iterdir())
    assert kept.name.endswith("-document-1-list.txt") and kept.read_bytes() == LIST
    assert text.name == f"{kept.name}.md"
    assert text.read_text().endswith("\n\noat milk\nrye bread\nthree lemons\n")


async def test_a_pdf_reaches_the_model_and_a_later_search_finds_it_with_a_citation(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    fake_openai.script(
        Reply("Revenue grew 12%."),
        ToolCalls([("memory_search", {"query": "spare key flowerpot"})]),
        Reply("Under the blue flowerpot."),
    )
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(
            OWNER, OWNER, "document", data=REPORT, file_name="Q3 report.pdf",
            mime_type="application/pdf", caption="summarise",
        )  # fmt: skip
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(OWNER, OWNER, "where is the spare key?")
        await fake_telegram.wait_for_messages(OWNER, 2)

    shown, _, answered = fake_openai.requests
    assert said(shown).startswith("[document: Q3 report.pdf, 2 pages] summarise\n\n")
    assert "Revenue grew by twelve percent." in said(shown)
    assert "## Page 2\n\nThe spare key is under the blue flowerpot." in said(shown)
    found = searched(answered)
    assert "The spare key is under the blue flowerpot." in found
    assert "-document-1-Q3_report.pdf.md#L" in found  # cited by the text kept beside the file
    assert f"{session(workspace)['messages'][0]['content']}" == (
        "[document: Q3 report.pdf, 2 pages] summarise"
    )


async def test_a_groups_document_is_found_in_the_group_and_nowhere_else(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    unstreamed = settings.telegram.model_copy(update={"stream": False})  # one message a reply
    settings = settings.model_copy(update={"telegram": unstreamed})
    search = ToolCalls([("memory_search", {"query": "spare key flowerpot"})])
    fake_openai.script(Reply("Read it."), search, Reply("Found."), search, Reply("Nothing."))
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(
            GROUP, OWNER, "document", data=REPORT, file_name="report.pdf",
            caption="@mnemo_test_bot keep this", chat_type="group",
        )  # fmt: skip
        await fake_telegram.wait_for_messages(GROUP, 1)
        fake_telegram.push_text(GROUP, OWNER, "@mnemo_test_bot the key?", chat_type="group")
        await fake_telegram.wait_for_messages(GROUP, 2)
        fake_telegram.push_text(OWNER, OWNER, "the key?")
        await fake_telegram.wait_for_messages(OWNER, 1)

    in_group, in_private = searched(fake_openai.requests[2]), searched(fake_openai.requests[4])
    assert f"chats/telegram%3A{GROUP}/files/" in in_group
    assert "The spare key is under the blue flowerpot." in in_group
    assert "flowerpot" not in in_private
    assert not (workspace / "memory" / "files").exists()
    group_files = workspace / "memory" / "chats" / f"telegram%3A{GROUP}" / "files"
    assert [p.suffixes[-2:] for p in sorted(group_files.iterdir())] == [[".pdf"], [".pdf", ".md"]]


async def test_what_has_no_text_gets_one_line_and_the_file_is_kept(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    sent = [
        ("scan.pdf", scanned_pdf(), NO_TEXT_LAYER),
        ("locked.pdf", locked_pdf("top secret"), ENCRYPTED),
        ("cut.pdf", REPORT[:300], BROKEN),
        ("data.csv", b"\x00\x01\x02\xff\xfe binary" * 20, NOT_TEXT),
        ("blank.md", b"\n \n", EMPTY),
    ]
    async with running_bot(settings, fake_telegram):
        for name, data, _ in sent:
            fake_telegram.push_media(OWNER, OWNER, "document", data=data, file_name=name)
        replies = await fake_telegram.wait_for_messages(OWNER, len(sent))

    kept = sorted((workspace / "memory" / "files").iterdir())  # by time, then message
    assert [reply.text for reply in replies] == [
        NO_TEXT.format(name=name, reason=reason, kept=f"files/{path.name}")
        for (name, _, reason), path in zip(sent, kept, strict=True)
    ]
    assert fake_openai.calls == 0


async def test_an_unsupported_type_gets_one_line_without_a_download(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(
            OWNER, OWNER, "document", data=b"PK\x03\x04", file_name="photos.zip",
            mime_type="application/zip",
        )  # fmt: skip
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == UNSUPPORTED.format(name="photos.zip")
    assert fake_telegram.downloads == []
    assert fake_openai.calls == 0


async def test_a_50_mb_document_is_refused_in_one_line_before_any_download(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(
            OWNER, OWNER, "document", data=REPORT, file_name="big.pdf", size=50 * MB
        )
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == TOO_LARGE.format(size="50 MB", limit="20 MB")
    assert fake_telegram.calls_to("getFile") == []
    assert fake_telegram.downloads == []
    assert fake_openai.calls == 0


async def test_a_long_document_is_cut_in_the_turn_and_kept_whole(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    lines = [f"Line {n}: the inventory of shelf {n} is complete." for n in range(1, 401)]
    settings = make_settings(
        workspace,
        telegram=fake_telegram,
        openai=fake_openai,
        media=MediaSettings(document_chars=2000),
    )
    fake_openai.script(Reply("Long."))
    async with running_bot(settings, fake_telegram):
        data = "\n".join(lines).encode()
        fake_telegram.push_media(OWNER, OWNER, "document", data=data, file_name="stock.md")
        await fake_telegram.wait_for_messages(OWNER, 1)

    message = said(fake_openai.last_request)
    [kept] = (workspace / "memory" / "files").iterdir()  # a .md file is its own text
    shown = message.partition("its text: ---\n")[2].partition("\n--- end of stock.md")[0]
    assert len(shown) <= 2000 and shown.endswith("complete.")
    assert lines[0] in shown and lines[-1] not in shown
    total = len("\n".join(lines))
    assert message.endswith(CUT.format(shown=len(shown), total=total, path=f"files/{kept.name}"))
    assert lines[-1] in kept.read_text()


def test_a_text_is_cut_to_the_tokens_it_may_take_as_well_as_its_characters() -> None:
    text = "\n".join(f"word{n} " * 10 for n in range(200))

    def count(part: str) -> int:
        return len(part.split())

    cut = bounded(text, 100_000, 300, count)
    assert count(cut) <= 300 and count(cut) > 250
    assert text.startswith(cut) and text[len(cut)] == "\n"  # after a whole line
    assert bounded(text, 100_000, 10_000, count) == text
    assert len(bounded(text, 500, 10_000, count)) <= 500


def test_what_a_document_is_comes_from_its_mime_type_and_extension() -> None:
    assert kind_of("report.PDF", "") == "pdf"
    assert kind_of("x", "application/pdf") == "pdf"
    assert kind_of("main.py", "application/octet-stream") == "text"
    assert kind_of("data.json", "application/json") == "text"
    assert kind_of("notes", "text/plain") == "text"
    assert kind_of("README", "") == "text"  # no claim either way: the bytes decide
    assert kind_of("cat.jpg", "image/jpeg") == "image"
    assert kind_of("logo.svg", "image/svg+xml") == "text"
    assert kind_of("letter.docx", "application/vnd.openxmlformats") is None
    assert kind_of("photos.zip", "application/zip") is None
    assert kind_of("blob", "application/zip") is None


async def test_an_image_sent_as_a_file_is_read_as_a_photo(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        tmp_path / "ws",
        telegram=fake_telegram,
        openai=fake_openai,
        media=MediaSettings(vision=True),
    )
    fake_openai.script(Reply("A cat."))
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(
            OWNER, OWNER, "document", data=b"\x89PNG a cat", file_name="cat.png",
            mime_type="image/png", caption="who is this?",
        )  # fmt: skip
        await fake_telegram.wait_for_messages(OWNER, 1)

    [(role, url)] = image_parts(fake_openai.last_request)
    assert (role, url[:22]) == ("user", "data:image/png;base64,")
    assert fake_openai.last_request["messages"][-1]["content"][0]["text"] == (
        "[photo: who is this?]"
    )


async def test_the_console_reads_a_pdf_named_by_file(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    pdf = tmp_path / "my report.pdf"
    pdf.write_bytes(REPORT)
    settings = make_settings(tmp_path / "ws", telegram=None, openai=fake_openai)
    fake_openai.script(Reply("It grew."))
    stdout = io.StringIO()
    async with started_app(settings) as app:
        lines = io.StringIO(f"/file '{pdf}' how did revenue do?\n")
        await ConsoleChannel(app.router, now=app.now, stdin=lines, stdout=stdout).run()

    assert "mnemo> It grew." in stdout.getvalue()
    message = said(fake_openai.last_request)
    assert message.startswith("[document: my report.pdf, 2 pages] how did revenue do?\n\n")
    assert "Revenue grew by twelve percent." in message


async def test_in_a_small_window_a_document_takes_a_quarter_of_it_and_context_shows_it(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    text = tmp_path / "minutes.txt"
    text.write_text("\n".join(f"Item {n}: the committee agreed on point {n}." for n in range(3000)))
    settings = small_window_settings(tmp_path / "ws", tmp_path, fake_openai, window=6000)
    fake_openai.script(Reply("Agreed on everything."))
    stdout = io.StringIO()
    async with started_app(settings) as app:
        lines = io.StringIO(f"/file {text}\n/context\n")
        await ConsoleChannel(app.router, now=app.now, stdin=lines, stdout=stdout).run()

    assert "mnemo> Agreed on everything." in stdout.getvalue()
    assert "a document's text" in stdout.getvalue()  # /context counts it apart
    shown = said(fake_openai.last_request).partition("its text: ---\n")[2].partition("\n--- end")[0]
    assert 1000 < TokenCounter().count(shown) <= 6000 * DOCUMENT_SHARE
    assert "Item 0: the committee" in shown and "Item 2999" not in shown


async def test_forget_takes_the_text_out_of_a_documents_kept_text(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    letter = tmp_path / "letter.txt"
    letter.write_text("Dear Ann,\nthe spare key is under the blue pot.\nSee you soon.\n")
    settings = make_settings(tmp_path / "ws", telegram=None, openai=fake_openai)
    fake_openai.script(Reply("A letter."))
    async with started_app(settings) as app:
        lines = io.StringIO(f"/file {letter}\n")
        await ConsoleChannel(app.router, now=app.now, stdin=lines, stdout=io.StringIO()).run()
        [receipt] = await say(app, "/forget spare key")
        found = await tool_result(app, fake_openai, "memory_search", {"query": "spare key pot"})

    [text] = (tmp_path / "ws" / "memory" / "files").glob("*.md")
    assert "documents' text" in receipt
    assert "spare key" not in text.read_text() and "See you soon." in text.read_text()
    assert "spare key" not in found
