"""What goes into the store and comes out of it: file signatures, source updates, the claims a
file makes, stored chunks as search sees them, and what a write changed."""

from __future__ import annotations

from dataclasses import dataclass

from bot.index.chunking import Chunk


@dataclass(frozen=True)
class FileSignature:
    path: str  # relative to memory/
    mtime_ns: int
    size: int
    sha256: str
    text: bool = True  # False: not text when read (indexed as empty)


@dataclass(frozen=True)
class ChunkRow:
    """A stored chunk as search sees it (text only when asked for)."""

    id: int
    path: str
    start_line: int
    end_line: int
    scope: str
    kind: str
    at: float
    salience: float
    text: str = ""
    origin: str = ""  # `Chunk.origin`


@dataclass(frozen=True)
class SourceUpdate:
    """The chunks of one source, replacing what it had (from `from_line` on, when given: the
    tail of a note that grew); `file` is recorded for a file."""

    source: str
    chunks: tuple[Chunk, ...]
    file: FileSignature | None = None
    digest: str = ""  # of the content the chunks were made from ("" for direct writes)
    from_line: int = 0  # > 0: only the source's chunks that start at or after this line go


@dataclass(frozen=True)
class FileClaims:
    """One file's sources after a sync: it is recorded with `signature` and claims `sources`
    (besides what it claimed before when it only grew: `added`)."""

    signature: FileSignature
    sources: tuple[str, ...]
    added: bool = False


@dataclass(frozen=True)
class Written:
    """What a write changed, for the in-memory vector cache to follow."""

    removed: tuple[int, ...]
    added: tuple[int, ...]  # ids of the written chunks, in update and chunk order
