"""File sync: which source files changed since the index last saw them, as source updates.

The index holds nothing that is not in a file. Each `SourceReader` owns one kind of file under
one root and turns a file's text into sources (`SourceUpdate`, each with a digest of what it was
made from): the memory markdown (`MarkdownSource`, one source a file), the session files
(`TranscriptSource`: one source an exchange) and the structured items' JSONL
(`bot.memory.items.indexing`: one source an item). Blocking.

Which files are looked at: every file under the roots (`source_files`, the walk: at start, on
`memory reindex`, and as a catch-up for hand edits), or only given ones (`source_files_at`: what
a turn wrote), each found as the walk would find it. Hidden files and folders (temp files of
atomic writes) are not sources, nor is anything but a regular file. A file is re-read only when
its (mtime_ns, size) moved, and re-parsed only when its sha256 changed too (a touched but
identical file is just re-recorded). A file gone from disk gives up its sources.

A file that only grew — its old bytes unchanged (their sha256 is the one recorded), ending with
a line break, and the new bytes text — is indexed as an append where its reader can (`grown`):
the items of the new JSONL lines, a daily note re-chunked from its last chunk on. What that
writes is what reading the whole file would have written; any other change is read whole.

A symlink is a source only where its reader `allows` it (for memory files, the path rule of
`bot.storage.confined`: a chat's link must stay in that chat's folder). A link refused is never
read: it is recorded with the digest `OUT_OF_SCOPE` and no sources (so what it held before goes,
with one warning), and judged again at every sync. The walk never enters a linked folder.

    reader.py        `SourceReader` (the protocol), `Growth`, `Appended`, `digest_of`
    markdown.py      `MarkdownSource`: the memory markdown
    transcripts.py   `TranscriptSource`: the session files, one source an exchange
    walk.py          `source_files` (the walk), `source_files_at` (given paths), `SourceFile`
    delta.py         `file_delta`: the files changed, touched, grown, gone; `FileDelta`
"""

from bot.index.sync.delta import OUT_OF_SCOPE, ChangedFile, FileDelta, file_delta
from bot.index.sync.markdown import MarkdownSource
from bot.index.sync.reader import Appended, Growth, LastLine, SourceReader, digest_of
from bot.index.sync.walk import SourceFile, source_files, source_files_at

__all__ = [
    "OUT_OF_SCOPE",
    "Appended",
    "ChangedFile",
    "FileDelta",
    "Growth",
    "LastLine",
    "MarkdownSource",
    "SourceFile",
    "SourceReader",
    "digest_of",
    "file_delta",
    "source_files",
    "source_files_at",
]
