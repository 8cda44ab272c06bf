"""The console channel: `python -m bot chat` talks to the same router in a terminal.

Input is read as it comes, also while a reply is being made: `/stop` (or an interrupt, Ctrl-C,
`ConsoleChannel.interrupt`) then cancels the running reply; other lines typed meanwhile wait
their turn. An interrupt at the prompt, or the end of input (Ctrl-D), ends the chat. A terminal
gets a spinner while the model works and replies rendered from markdown (rich), their line
breaks and tags kept (`bot.channels.markdown`); a pipe gets the plain text, `mnemo> ` before
each reply. A terminal's chat opens with one line saying what it is and how to use and leave it
(`BANNER`; a pipe's output stays the conversation alone). On a terminal the spinner's line
shows the end of the answer as it is written, as text without its markdown (`ConsoleDraft`, a
draft of `bot.turn.live`). A file a reply sends (`/context full`) is written into `files` and
named.
`/file PATH [caption]` (or a path alone, as a terminal pastes a file dragged onto it) sends
a file: a photo, a voice note or audio, a document (`bot.media`).

Under `make chat` the terminal's Ctrl-C would reach make as well, which then ends itself by the
signal once the chat is over (a shell reports the interrupt); `own_terminal` gives the chat a
process group of its own in the terminal's foreground while it runs, so only the chat hears it.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import mimetypes
import os
import shlex
import signal
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.markdown import Markdown
from rich.status import Status
from rich.text import Text

from bot.channels.markdown import hard_breaks, literal_tags, plain
from bot.media.files import LocalFiles
from bot.models import Attachment, AttachmentKind, Document, Inbound, Keyed
from bot.storage.files import atomic_write_text
from bot.storage.inbox import Entry
from bot.turn.access import LOCAL_USER_ID
from bot.turn.router import Router

CHANNEL = "console"
PROMPT = "you> "
LABEL = "mnemo> "
STOP = "/stop"
FILE = "/file"
SPINNER = "thinking… (/stop or Ctrl-C stops the reply)"
BANNER = "Mnemo in this terminal: type a message; /help lists commands; Ctrl-D leaves."
DRAFT_INTERVAL = 0.1  # seconds between two updates of the spinner's line
INTERRUPTED = object()  # an interrupt, queued like a line
Line = str | object | None  # a line, `INTERRUPTED`, or None: the end of input


class ConsoleReplier:
    def __init__(
        self, out: TextIO, *, terminal: bool | None = None, files: Path | None = None
    ) -> None:
        self.out = out
        self.terminal = out.isatty() if terminal is None else terminal
        self.console = Console(file=out, force_terminal=self.terminal, highlight=False)
        self.files = files
        self.status: Status | None = None  # the spinner, while the model works

    def parts(self, text: str) -> Sequence[str]:
        return [text]

    async def send_part(self, part: object) -> None:
        if isinstance(part, Document):
            part = await asyncio.to_thread(self._saved, part)
        if isinstance(part, Keyed):  # no buttons here: their text commands instead
            part = part.as_text()
        if not self.terminal:
            self.out.write(f"{LABEL}{part}\n")
            self.out.flush()
            return
        self.console.print(Text(LABEL.strip(), style="bold cyan"))
        self.console.print(Markdown(hard_breaks(literal_tags(str(part)))))

    async def acknowledge(self) -> None:
        """The console shows its spinner instead."""

    def greet(self) -> None:
        """A terminal's first line: what this is, and how to use and leave it."""
        if self.terminal:
            self.console.print(Text(BANNER, style="dim"))

    def end(self) -> None:
        """The chat is over: a terminal's shell prompt starts on a line of its own."""
        if self.terminal:
            self.out.write("\n")
            self.out.flush()

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        if not self.terminal:
            yield
            return
        with self.console.status(SPINNER, spinner="dots") as status:
            self.status = status
            try:
                yield
            finally:
                self.status = None

    def draft(self) -> ConsoleDraft:
        return ConsoleDraft(self)

    def _saved(self, document: Document) -> str:
        """Where the file went (or, with no folder for files, its text)."""
        if self.files is None:
            return document.text
        path = self.files / document.name
        atomic_write_text(path, document.text)
        return f"{document.caption or document.name}: {path}"


@dataclass(eq=False)
class ConsoleDraft:
    """The end of the answer being written, on the spinner's line (a pipe shows nothing)."""

    interval = DRAFT_INTERVAL

    replier: ConsoleReplier

    async def show(self, text: str) -> None:
        if (status := self.replier.status) is not None:
            line = plain(text).rstrip().rpartition("\n")[2]
            room = max(self.replier.console.width - 4, 8)  # the spinner goes before it
            status.update(Text(line if len(line) <= room else "…" + line[-room + 1 :]))

    async def hand_over(self, reply: str) -> None:
        """The reply is printed in full after: the spinner's line goes back to waiting."""
        await self.close()

    async def close(self) -> None:
        if (status := self.replier.status) is not None:
            status.update(SPINNER)


class ConsoleChannel:
    def __init__(
        self,
        router: Router,
        *,
        now: Callable[[], datetime],
        stdin: TextIO,
        stdout: TextIO,
        replier: ConsoleReplier | None = None,
    ) -> None:
        self.router = router
        self.now = now
        self.stdin = stdin
        self.replier = replier or ConsoleReplier(stdout)
        self._lines: asyncio.Queue[Line] = asyncio.Queue()
        self._waiting: deque[Line] = deque()  # read during a reply: answered after it
        self._scheduled: set[asyncio.Task[None]] = set()  # reminders being shown

    def interrupt(self) -> None:
        """Ctrl-C: stops the reply in progress, or, at the prompt, ends the chat."""
        self._lines.put_nowait(INTERRUPTED)

    async def run(self) -> None:
        """Replay, then answer lines until the end of input or an interrupt at the prompt."""
        if self.router.media is not None:
            self.router.media.connect(CHANNEL, LocalFiles())
        self.replier.greet()
        await self.router.replay(lambda _: self.replier, channel=CHANNEL)
        self.router.outlets[CHANNEL] = self._scheduled_entry
        try:
            await self._converse()
        finally:
            self.router.outlets.pop(CHANNEL, None)
            await asyncio.gather(*self._scheduled, return_exceptions=True)

    def _scheduled_entry(self, entry: Entry) -> None:
        """A due reminder (`bot.reminders`), shown whenever it comes."""
        task = asyncio.create_task(self.router.answer(entry, self.replier))
        self._scheduled.add(task)
        task.add_done_callback(self._scheduled.discard)

    async def _converse(self) -> None:
        async with _reading(self.stdin, self._lines):
            while True:
                self.replier.out.write(PROMPT)
                self.replier.out.flush()
                line = self._waiting.popleft() if self._waiting else await self._lines.get()
                if line is None or line is INTERRUPTED:
                    self.replier.end()
                    return
                if text := str(line).strip():
                    await self._answer(text)

    async def _answer(self, text: str) -> None:
        """One line answered, while `/stop` or an interrupt read meanwhile can stop it."""
        reply = asyncio.create_task(self.router.handle(self._inbound(text), self.replier))
        try:
            while not reply.done():
                line = asyncio.create_task(self._lines.get())
                await asyncio.wait({reply, line}, return_when=asyncio.FIRST_COMPLETED)
                if not line.done():
                    line.cancel()
                    continue
                found = line.result()
                if found is INTERRUPTED or (isinstance(found, str) and found.strip() == STOP):
                    await self.router.handle(self._inbound(STOP), self.replier)
                else:
                    self._waiting.append(found)
        finally:
            await reply

    def _inbound(self, line: str) -> Inbound:
        text, attachments = local_file(line)
        return Inbound(
            id=f"{CHANNEL}:{uuid.uuid4().hex}",
            channel=CHANNEL,
            chat_id=0,
            user_id=LOCAL_USER_ID,
            text=text,
            received_at=self.now(),
            attachments=attachments,
        )


def local_file(line: str) -> tuple[str, tuple[Attachment, ...]]:
    """`/file PATH [caption]`, or a full path alone that names a file (a file dragged onto
    the terminal): (the caption, the file); any other line: (the line, no file)."""
    command, _, rest = line.partition(" ")
    try:
        words = shlex.split(rest if command == FILE else line)
    except ValueError:
        words = (rest if command == FILE else line).split()
    if command == FILE and words:
        path, caption = Path(words[0]).expanduser(), " ".join(words[1:])
    elif len(words) == 1 and words[0].startswith(("/", "~")) and _is_file(words[0]):
        path, caption = Path(words[0]).expanduser(), ""
    else:
        return line, ()
    mime = mimetypes.guess_type(path.name)[0]
    size = path.stat().st_size if path.is_file() else None
    return caption, (Attachment(_kind(mime), str(path), path.name, mime, size),)


def _is_file(text: str) -> bool:
    return Path(text).expanduser().is_file()


def _kind(mime: str | None) -> AttachmentKind:
    major = (mime or "").partition("/")[0]
    return "photo" if major == "image" else "audio" if major == "audio" else "document"


@contextlib.contextmanager
def own_terminal(stream: TextIO) -> Iterator[None]:
    """While the block runs, this process's own group is the terminal's foreground (so that
    Ctrl-C reaches only it); the terminal is given back after. Nothing when `stream` is not a
    terminal, or when this process leads its group already (a shell started it)."""
    fd = _shared_terminal(stream)
    if fd is None:
        yield
        return
    before = os.tcgetpgrp(fd)
    ttou = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may hand back
    try:
        os.setpgid(0, 0)
        os.tcsetpgrp(fd, os.getpgrp())
        yield
    finally:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(fd, before)
        signal.signal(signal.SIGTTOU, ttou)


def _shared_terminal(stream: TextIO) -> int | None:
    """The descriptor of the terminal `stream` is, when this process shares its group."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return None
    return fd if os.isatty(fd) and os.getpgrp() != os.getpid() else None


@contextlib.asynccontextmanager
async def _reading(stream: TextIO, lines: asyncio.Queue[Line]) -> AsyncIterator[None]:
    """Lines of `stream` into `lines` as they come (None at its end): from the event loop for a
    terminal or a pipe; at once for what never blocks (a file, a StringIO)."""
    loop = asyncio.get_running_loop()
    try:
        fd = stream.fileno()
        loop.add_reader(fd, _Lines(fd, lines, loop).read)
    except (OSError, ValueError):  # no descriptor, or a regular file the loop cannot watch
        for line in iter(stream.readline, ""):
            lines.put_nowait(line)
        lines.put_nowait(None)
        yield
        return
    try:
        yield
    finally:
        loop.remove_reader(fd)


class _Lines:
    """What a descriptor has to read, cut into lines (UTF-8; a broken byte is replaced)."""

    def __init__(
        self, fd: int, lines: asyncio.Queue[Line], loop: asyncio.AbstractEventLoop
    ) -> None:
        self.fd = fd
        self.lines = lines
        self.loop = loop
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.partial = ""

    def read(self) -> None:
        data = os.read(self.fd, 65536)
        text = self.partial + self.decoder.decode(data, final=not data)
        *complete, self.partial = text.split("\n")
        for line in complete:
            self.lines.put_nowait(line + "\n")
        if not data:
            self.loop.remove_reader(self.fd)
            if self.partial:
                self.lines.put_nowait(self.partial)
            self.lines.put_nowait(None)
