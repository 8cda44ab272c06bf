"""Chunks: a memory file or an exchange cut into ~400-token pieces that keep their line numbers.

A heading (`#`) always starts a new chunk (one topic of MEMORY.md, one history entry). Within a
section, paragraphs and lines are packed greedily up to `max_tokens`; when a chunk is full it is
cut at its last paragraph break if that keeps it at least half full, else at the line, and the
next chunk repeats the last ~15% of it (whole lines) so that a fact on the cut is whole in one
of the two. A single line longer than a chunk is cut into overlapping pieces that all carry its
line number. Blank lines are dropped from chunk text. Tokens are estimated as 4 characters
(tokenizing every turn would cost more than the rest of ingest).

Chunks are made left to right, and a chunk depends only on its own lines and the one after it:
after lines are appended, every chunk but the last one stays as it was. So a note that grew is
re-chunked from where its last chunk starts (`file_from`), and the chunks are those of the
whole file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bot.index.sources import chunk_time, kind_of, origin_of, scope_of

CHARS_PER_TOKEN = 4
CHUNK_TOKENS = 400
OVERLAP = 0.15
DEFAULT_SALIENCE = 0.5


@dataclass(frozen=True)
class Chunk:
    path: str  # relative to memory/, or a synthetic `sessions/<key>#<turn>` / document path
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str
    scope: str  # "" global, else the chat key
    kind: str  # "memory", "note", "history", "working", "exchange", "item"
    at: float  # epoch seconds
    salience: float = DEFAULT_SALIENCE
    origin: str = ""  # whose words: "" the people's own, else what others' words (`origin_of`)

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


@dataclass(frozen=True)
class _Line:
    number: int
    text: str
    heading: bool = False
    paragraph: bool = False  # the first line after a blank line


@dataclass(frozen=True)
class Chunker:
    max_tokens: int = CHUNK_TOKENS
    overlap: float = OVERLAP

    @property
    def max_chars(self) -> int:
        return self.max_tokens * CHARS_PER_TOKEN

    @property
    def overlap_chars(self) -> int:
        return int(self.max_chars * self.overlap)

    def file(self, path: str, text: str, *, mtime: float) -> list[Chunk]:
        """The chunks of one memory file; scope, kind and time come from its path."""
        return self._file_chunks(path, self._lines(text), mtime=mtime)

    def file_from(self, path: str, text: str, *, line: int, mtime: float) -> list[Chunk] | None:
        """The chunks `file` makes of a whole file from a chunk that starts at line `line` on,
        given the file's text from that line (`text`). None when that line is longer than a
        chunk: a chunk may start at any of its pieces."""
        lines = self._lines(text, first=line)
        if not lines or lines[0].number != line:
            return None  # a blank line: no chunk starts there
        if len(lines) > 1 and lines[1].number == line:
            return None
        return self._file_chunks(path, lines, mtime=mtime)

    def _file_chunks(self, path: str, lines: list[_Line], *, mtime: float) -> list[Chunk]:
        scope, kind = scope_of(path), kind_of(path)
        chunks = []
        for group in self._groups(lines):
            text, at = _join(group), chunk_time(path, group[0].text, mtime)
            first, last = group[0].number, group[-1].number
            chunks.append(
                Chunk(path, first, last, text, scope, kind, at, origin=origin_of(path, text))
            )
        return chunks

    def text(
        self,
        text: str,
        *,
        path: str,
        scope: str,
        kind: str,
        at: float,
        salience: float,
        origin: str = "",
    ) -> list[Chunk]:
        """Chunks of free text (an exchange, a document) with the metadata the caller gives;
        a text that fits in one chunk is one chunk, headings or not."""
        if len(text) <= self.max_chars:
            chunks = _whole(text, path=path, scope=scope, kind=kind, at=at, salience=salience)
        else:
            chunks = [
                Chunk(path, group[0].number, group[-1].number, _join(group), scope, kind, at)
                for group in self.pieces(text)
            ]
        return [replace(c, salience=salience, origin=origin) for c in chunks]

    def pieces(self, text: str) -> list[list[_Line]]:
        """The text's non-blank lines, grouped into chunks (each group non-empty)."""
        return self._groups(self._lines(text))

    def _groups(self, lines: list[_Line]) -> list[list[_Line]]:
        groups: list[list[_Line]] = []
        start = 0
        while start < len(lines):
            end = self._end(lines, start)
            groups.append(lines[start:end])
            start = self._next_start(lines, start, end)
        return groups

    def _end(self, lines: list[_Line], start: int) -> int:
        """Where the chunk that begins at `start` ends (exclusive): at a heading, or when full
        at its last paragraph break if that keeps it half full, else at the last line that fits."""
        size, end = len(lines[start].text), start + 1
        while end < len(lines) and not lines[end].heading:
            if size + len(lines[end].text) > self.max_chars:
                return _paragraph_cut(lines, start, end, self.max_chars // 2)
            size, end = size + len(lines[end].text), end + 1
        return end

    def _next_start(self, lines: list[_Line], start: int, end: int) -> int:
        """Where the next chunk begins: at a heading, else back by the overlap (whole lines,
        never the whole previous chunk, and only if the next new line still fits)."""
        if end == len(lines) or lines[end].heading:
            return end
        room = min(self.overlap_chars, self.max_chars - len(lines[end].text))
        size, back = 0, end
        while back - 1 > start and size + len(lines[back - 1].text) <= room:
            back -= 1
            size += len(lines[back].text)
        return back

    def _lines(self, text: str, *, first: int = 1) -> list[_Line]:
        """The text's non-blank lines, numbered from `first` (a chunk's first line is never
        asked whether it follows a blank one or is a heading: its flags do not matter)."""
        found: list[_Line] = []
        after_blank = True
        for number, raw in enumerate(text.split("\n"), start=first):
            line = raw.rstrip("\r")
            if not line.strip():
                after_blank = True
                continue
            heading = line.lstrip().startswith("#")
            found.extend(self._split_long(_Line(number, line, heading, after_blank)))
            after_blank = False
        return found

    def _split_long(self, line: _Line) -> list[_Line]:
        """A line longer than a chunk as overlapping pieces; each piece has the line's number."""
        if len(line.text) <= self.max_chars:
            return [line]
        step = self.max_chars - self.overlap_chars
        starts = range(0, len(line.text) - self.overlap_chars, step)
        return [
            _Line(line.number, line.text[s : s + self.max_chars], line.heading and s == 0, s == 0)
            for s in starts
        ]


def _whole(
    text: str, *, path: str, scope: str, kind: str, at: float, salience: float
) -> list[Chunk]:
    numbered = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if not numbered:
        return []
    body = "\n".join(line.rstrip("\r") for _, line in numbered)
    return [Chunk(path, numbered[0][0], numbered[-1][0], body, scope, kind, at, salience)]


def _paragraph_cut(lines: list[_Line], start: int, end: int, min_chars: int) -> int:
    """The last paragraph start in (start, end) with at least `min_chars` before it, else end."""
    size = _size(lines[start:end])
    for index in range(end - 1, start, -1):
        size -= len(lines[index].text)
        if size < min_chars:
            break
        if lines[index].paragraph:
            return index
    return end


def _size(lines: list[_Line]) -> int:
    return sum(len(line.text) for line in lines)


def _join(lines: list[_Line]) -> str:
    return "\n".join(line.text for line in lines)
