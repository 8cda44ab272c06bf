"""Documents: text files and PDFs read into the turn; an image sent as a file goes to the photo
reader; any other type is one line, refused before it is downloaded.

A document is kept (`MessageFiles`) and its text saved beside it as markdown,
`files/<kept name>.md` under the scope's memory folder (a `.md` document is its own text), so
the index takes it into that scope alone — a group's document is found only in that group —
and `memory_search` cites it `files/….md#Lx-Ly`. The session and the daily note keep the line
`[document: name.pdf, 12 pages] caption`; the text itself goes with this turn's message only
(`Reading.attached`), cut to `max_chars` and to a quarter of the model's window
(`DOCUMENT_SHARE`), saying so when it was cut and where the whole of it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog

from bot.media.extraction import Extracted, NoText, extract, kind_of
from bot.media.files import Kept, MessageFiles
from bot.media.photo import PhotoReader
from bot.media.reading import DOCUMENT, Reading, Unreadable
from bot.models import Attachment, Inbound
from bot.storage.files import ON_DISK, Documents

log = structlog.get_logger(__name__)

DOCUMENT_SHARE = 0.25  # of the model's window, at most, for a document's text in the turn
UNSUPPORTED = (
    "I can't read {name}. I read text files (txt, md, csv, json, source code …) and PDFs, "
    "and images sent as files."
)
NO_TEXT = "I couldn't read {name}: {reason}. I kept it as {kept}."
SHOWN = "--- {name} ({size}); its text: ---\n{text}\n--- end of {name} ---"
CUT = (
    "[Only the first {shown:,} of its {total:,} characters are shown here. The whole text is "
    "saved as {path} and searchable: memory_search finds any part, memory_get reads it by line.]"
)


@dataclass(eq=False, kw_only=True)
class DocumentReader:
    photos: PhotoReader  # an image sent as a file
    max_chars: int
    window: Callable[[], int]  # the model's context window, in tokens
    count: Callable[[str], int]  # tokens, as the prompt meter counts them

    async def read(self, inbound: Inbound, attachment: Attachment, files: MessageFiles) -> Reading:
        name = " ".join((attachment.file_name or "").split()) or "the document"
        kind = kind_of(attachment.file_name or "", attachment.mime_type or "")
        if kind == "image":
            return await self.photos.read(inbound, attachment, files)
        if kind is None:
            log.info("document_unsupported", mime_type=attachment.mime_type)
            raise Unreadable(UNSUPPORTED.format(name=name))
        kept = await files.keep(attachment)
        try:
            found = await asyncio.to_thread(extract, kept.data, kind)
        except NoText as exc:
            log.info("document_unread", kind=kind, reason=str(exc))
            raise Unreadable(NO_TEXT.format(name=name, reason=exc, kept=kept.name)) from None
        documents = files.workspace.documents
        saved = await asyncio.to_thread(save_text, kept, name, found, documents)
        cited = saved.relative_to(files.workspace.memory_root).as_posix()
        log.info("document_read", kind=kind, chars=len(found.text), path=cited)
        label = f"{DOCUMENT}{name}, {found.size}]"
        caption = " ".join(inbound.text.split())
        return Reading(
            f"{label} {caption}" if caption else label,
            attached=self.shown(name, found, cited),
            written=(saved,),
        )

    def shown(self, name: str, found: Extracted, path: str) -> str:
        """The document's text as the turn shows it: whole, or its beginning and a note."""
        text = bounded(found.text, self.max_chars, int(DOCUMENT_SHARE * self.window()), self.count)
        block = SHOWN.format(name=name, size=found.size, text=text)
        if len(text) == len(found.text):
            return block
        return f"{block}\n{CUT.format(shown=len(text), total=len(found.text), path=path)}"


def bounded(text: str, max_chars: int, max_tokens: int, count: Callable[[str], int]) -> str:
    """`text`, or its beginning within `max_chars` and `max_tokens` (cut after a line when one
    ends near the limit)."""
    limit = max_chars
    for _ in range(4):  # tokens per character vary: shrink until the count fits
        if len(text) <= limit and count(text) <= max_tokens:
            return text
        cut = _cut(text, limit)
        tokens = count(cut)
        if tokens <= max_tokens:
            return cut
        limit = int(len(cut) * max_tokens / tokens * 0.95)
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = text[:limit]
    line = head.rfind("\n", int(limit * 0.9))
    return head[:line] if line > 0 else head


def save_text(kept: Kept, name: str, found: Extracted, documents: Documents = ON_DISK) -> Path:
    """Where the document's text is, as markdown beside the file: written unless it is there
    already (the message answered again after a restart, perhaps by another replica), or the
    file is its own (`.md`)."""
    if kept.path.suffix == ".md":
        return kept.path
    path = kept.path.with_name(f"{kept.path.name}.md")
    header = f"# {name}\n\nA document ({found.size}) kept as {kept.name}; its text:\n\n"
    documents.write_if(path, (header + found.text + "\n").encode("utf-8"), None)
    return path
