"""The console channel: lines in, `mnemo>` replies out, commands, replay, the end at EOF; /stop
and Ctrl-C during a reply, markdown on a terminal, and `python -m bot chat` as a process: only
the conversation on the terminal (logs in a file), exit status 0."""

from __future__ import annotations

import asyncio
import fcntl
import io
import json
import os
import re
import signal
import struct
import sys
import termios
from asyncio.subprocess import Process
from pathlib import Path

from bot.app import App
from bot.channels.console import BANNER, ConsoleChannel, ConsoleReplier, local_file
from bot.models import Inbound
from bot.settings import MediaSettings
from bot.storage.inbox import Inbox
from tests.fakes.openai_api import FakeOpenAI, Hang, Reply, image_parts
from tests.harness import API_KEY, REPO, make_settings, started_app


async def chat(app: App, lines: str) -> str:
    """Feed `lines` to the console until end of input; what it printed."""
    stdout = io.StringIO()
    console = ConsoleChannel(app.router, now=app.now, stdin=io.StringIO(lines), stdout=stdout)
    await asyncio.wait_for(console.run(), timeout=5)
    return stdout.getvalue()


async def test_each_line_is_a_turn_and_the_reply_is_printed(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Hi there!"), Reply("Fine, thanks."))

    out = await chat(app, "hello\n\nhow are you?\n")

    assert "mnemo> Hi there!\n" in out
    assert out.index("mnemo> Hi there!") < out.index("mnemo> Fine, thanks.")
    assert out.count("you> ") == 4  # three lines (one blank) and the end of input
    assert [r["messages"][-1]["content"] for r in fake_openai.requests] == ["hello", "how are you?"]
    session = json.loads((workspace / "sessions" / "console_0.json").read_text())
    assert [m["content"] for m in session["messages"]] == [
        "hello",
        "Hi there!",
        "how are you?",
        "Fine, thanks.",
    ]


async def test_a_file_path_sends_a_photo_or_a_voice_note(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    photo = tmp_path / "my holiday.png"
    photo.write_bytes(b"\x89PNG a photo")
    voice = tmp_path / "note.ogg"
    voice.write_bytes(b"OggS a voice note")
    fake_openai.transcribe("call mum on sunday")
    fake_openai.script(Reply("A beach."), Reply("I'll remind you."))
    settings = make_settings(
        tmp_path / "ws", telegram=None, openai=fake_openai, media=MediaSettings(vision=True)
    )
    async with started_app(settings) as app:
        out = await chat(app, f"/file '{photo}' where was this?\n{voice}\n")

    assert "mnemo> A beach." in out and "mnemo> I'll remind you." in out
    shown, heard = fake_openai.requests
    assert image_parts(shown)[0][1].startswith("data:image/png;base64,")
    assert shown["messages"][-1]["content"][0]["text"] == "[photo: where was this?]"
    assert heard["messages"][-1]["content"] == "[audio: note.ogg] call mum on sunday"
    assert fake_openai.transcription_requests[0]["data"] == b"OggS a voice note"


def test_a_line_is_a_file_only_when_it_says_so_or_names_one(tmp_path: Path) -> None:
    assert local_file("hello there") == ("hello there", ())
    assert local_file(f"{tmp_path}/missing.jpg") == (f"{tmp_path}/missing.jpg", ())
    caption, [missing] = local_file("/file /no/such.jpg a caption")
    assert (caption, missing.kind, missing.file_id) == ("a caption", "photo", "/no/such.jpg")


async def test_commands_work_at_the_console(app: App, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply("Hi there!"))

    out = await chat(app, "hello\n/status\n")

    assert "mnemo> Messages: 2\n" in out
    assert "Model: fake-model" in out
    assert fake_openai.calls == 1


async def test_end_of_input_at_once_ends_quietly(app: App, fake_openai: FakeOpenAI) -> None:
    assert await chat(app, "") == "you> "


async def test_a_console_message_left_by_a_crash_is_answered_first(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    inbox = Inbox(workspace / "state" / "inbox")
    left = Inbound(
        id="console:left",
        channel="console",
        chat_id=0,
        user_id=0,
        text="left",
        received_at=app.now(),
    )
    await inbox.accept(left)
    fake_openai.script(Reply("answering what was left"))

    out = await chat(app, "")

    assert out == "mnemo> answering what was left\nyou> "
    assert await inbox.pending() == []


# ----------------------------------------------------------------------------- stopping, files


async def test_stop_typed_during_a_reply_cancels_it_and_later_lines_wait_their_turn(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Hang(), Reply("hello again"))
    read_end, write_end = os.pipe()
    stdout = io.StringIO()
    with os.fdopen(read_end, "r") as stdin:
        console = ConsoleChannel(app.router, now=app.now, stdin=stdin, stdout=stdout)
        running = asyncio.create_task(console.run())
        os.write(write_end, b"tell me a very long story\n")
        await fake_openai.wait_until_hanging()
        os.write(write_end, b"/stop\nand now?\n")
        os.close(write_end)  # the end of input, after those lines
        await asyncio.wait_for(running, timeout=5)

    out = stdout.getvalue()
    assert "mnemo> Stopped.\n" in out
    assert out.index("mnemo> Stopped.") < out.index("mnemo> hello again")
    assert fake_openai.requests[-1]["messages"][-1]["content"] == "and now?"


def test_a_terminal_gets_markdown_rendered_and_a_pipe_the_text() -> None:
    terminal, pipe = io.StringIO(), io.StringIO()

    asyncio.run(ConsoleReplier(terminal, terminal=True).send_part("Take **the ferry**."))
    asyncio.run(ConsoleReplier(pipe, terminal=False).send_part("Take **the ferry**."))

    assert "**" not in terminal.getvalue()
    assert "\x1b[1mthe ferry\x1b[0m" in terminal.getvalue()  # bold
    assert pipe.getvalue() == "mnemo> Take **the ferry**.\n"


async def test_context_full_at_the_console_writes_the_prompt_to_a_file(
    app: App, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply("Noted."))
    stdout = io.StringIO()
    replier = ConsoleReplier(stdout, files=tmp_path)
    console = ConsoleChannel(
        app.router,
        now=app.now,
        stdin=io.StringIO("my kite is red\n/context full\n"),
        stdout=stdout,
        replier=replier,
    )

    await asyncio.wait_for(console.run(), timeout=5)

    [saved] = files(tmp_path)
    assert "my kite is red" in saved.read_text()
    assert f"mnemo> The whole prompt: {saved}\n" in stdout.getvalue()


def files(folder: Path) -> list[Path]:
    return list(folder.glob("context-*.txt"))


# ----------------------------------------------------------------------------- as a process


def chat_env(workspace: Path, openai: FakeOpenAI) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workspace.parent),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        "BOT_WORKSPACE": str(workspace),
        "BOT_LLM__BASE_URL": openai.base_url,
        "BOT_LLM__API_KEY": API_KEY,
        "BOT_LLM__MODEL": "fake-model",
        "BOT_LLM__MAX_RETRIES": "0",
    }


async def start_chat(workspace: Path, openai: FakeOpenAI, *args: str) -> Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "chat",
        *args,
        cwd=workspace.parent,
        env=chat_env(workspace, openai),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def read_until(process: Process, text: str, *, within: float = 30) -> str:
    """What the process printed, up to and with `text`."""
    assert process.stdout is not None
    seen = b""
    while text.encode() not in seen:
        chunk = await asyncio.wait_for(process.stdout.read(1024), timeout=within)
        assert chunk, f"the chat ended before {text!r}: {seen.decode()!r}"
        seen += chunk
    return seen.decode()


async def finish(process: Process) -> tuple[int, str, str]:
    """Its exit status and the rest of its output and its errors."""
    out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_chat_prints_the_conversation_only_and_ends_cleanly_at_eof(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    fake_openai.script(Reply("Hi **there**!"))
    process = await start_chat(workspace, fake_openai)
    assert process.stdin is not None
    process.stdin.write(b"hello\n")

    shown = await read_until(process, "mnemo> Hi **there**!\n")
    process.stdin.close()
    status, rest, errors = await finish(process)

    assert status == 0
    assert shown + rest == "you> mnemo> Hi **there**!\nyou> "
    assert errors == ""  # no log line, no traceback
    log = workspace / "logs" / "console.log"
    assert "turn_done" in log.read_text()
    assert log.stat().st_mode & 0o777 == 0o600


async def test_ctrl_c_stops_the_reply_then_ends_the_chat_with_status_0(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    fake_openai.script(Hang())
    process = await start_chat(workspace, fake_openai)
    assert process.stdin is not None
    process.stdin.write(b"tell me a very long story\n")
    await fake_openai.wait_until_hanging(timeout=30)

    process.send_signal(signal.SIGINT)
    await read_until(process, "mnemo> Stopped.\nyou> ")
    process.send_signal(signal.SIGINT)  # at the prompt: the end
    status, _, errors = await finish(process)

    assert status == 0
    assert "Traceback" not in errors and "KeyboardInterrupt" not in errors


async def test_verbose_logs_go_to_stderr(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    process = await start_chat(workspace, fake_openai, "-v")
    assert process.stdin is not None
    process.stdin.close()

    status, out, errors = await finish(process)

    assert status == 0
    assert out == "you> "
    assert "index_opened" in errors
    assert not (workspace / "logs" / "console.log").exists()


async def test_a_terminal_shows_the_end_of_the_answer_as_it_is_written() -> None:
    terminal = io.StringIO()
    replier = ConsoleReplier(terminal, terminal=True)

    async with replier.typing():
        draft = replier.draft()
        await draft.show("First line.\nThe second line is still gro")
        await asyncio.sleep(0.3)  # the spinner redraws about ten times a second
        await draft.close()

    assert "The second line is still gro" in terminal.getvalue()
    assert "First line." not in terminal.getvalue()


async def test_a_turn_at_a_terminal_streams_then_prints_the_reply_once(
    app: App, fake_openai: FakeOpenAI
) -> None:
    answer = " ".join(f"word{n}" for n in range(30))
    fake_openai.script(Reply(answer, pieces=10, chunk_delay=0.1))
    terminal = io.StringIO()
    console = ConsoleChannel(
        app.router,
        now=app.now,
        stdin=io.StringIO("talk\n"),
        stdout=terminal,
        replier=ConsoleReplier(terminal, terminal=True),
    )
    await asyncio.wait_for(console.run(), timeout=5)

    shown, label, printed = terminal.getvalue().rpartition("mnemo")
    assert label and "word5" in shown  # on the spinner's line first
    assert printed.count("word0 ") == 1 and printed.count("word29") == 1  # the reply, once


async def test_a_terminal_keeps_line_breaks_and_tags(app: App, fake_openai: FakeOpenAI) -> None:
    poem = "Roses are red,\nviolets are blue,\na <b>tag</b> in <text> stays\n\n```\ncode\n```"
    fake_openai.script(Reply(poem))
    terminal = io.StringIO()
    console = ConsoleChannel(
        app.router,
        now=app.now,
        stdin=io.StringIO("a poem please\n/status\n"),
        stdout=terminal,
        replier=ConsoleReplier(terminal, terminal=True),
    )
    await asyncio.wait_for(console.run(), timeout=5)

    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.getvalue())
    lines = [line.strip() for line in plain.splitlines()]
    for line in ("Roses are red,", "violets are blue,", "a <b>tag</b> in <text> stays", "code"):
        assert line in lines
    assert "Messages: 2" in lines
    assert any(line.startswith("Model: fake-model") for line in lines)


async def test_make_chat_on_a_terminal_says_what_it_is_and_its_spinner_shows_no_markdown(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    answer = "The **answer** is `42`, and **here** " + " ".join(f"word{n}" for n in range(30))
    fake_openai.script(Reply(answer, pieces=12, chunk_delay=0.15))
    main, side = os.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "chat",
        cwd=workspace.parent,
        env={**chat_env(workspace, fake_openai), "TERM": "xterm"},
        stdin=side,
        stdout=side,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # the terminal is its own: no foreground to take
    )
    os.close(side)
    try:
        shown = await terminal_until(main, "you> ")
        os.write(main, b"hello\n")
        shown += await terminal_until(main, "you> ")
    finally:
        os.write(main, b"\x04")  # Ctrl-D: the end
        await asyncio.wait_for(process.wait(), timeout=30)
        os.close(main)

    seen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    assert seen.lstrip().splitlines()[0].rstrip() == BANNER  # one line of an 80-column terminal
    assert "The answer is 42, and here" in seen  # the spinner's line, and the reply
    assert "**" not in seen and "`" not in seen


async def terminal_until(fd: int, text: str) -> str:
    """What a terminal printed from now until `text`."""
    seen = ""
    loop = asyncio.get_running_loop()
    while text not in seen:
        chunk = await asyncio.wait_for(loop.run_in_executor(None, os.read, fd, 4096), 30)
        assert chunk, f"the chat ended: {seen!r}"
        seen += chunk.decode(errors="replace")
    return seen
