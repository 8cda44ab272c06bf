"""Code-aware extraction: the shell commands, error messages and code a text holds.

Heuristics, small and predictable on purpose:

- **Commands**: every line of a fenced block tagged as shell (```bash, sh, zsh, shell, fish,
  powershell), except comments; in a transcript block (```console, shell-session, terminal) and
  anywhere else, only lines that start with `$ `. A trailing backslash joins the next line.
- **Errors**: a line that starts (after indentation) with `SomethingError:`,
  `SomethingException:`, `Error:`, `error:`, `ERROR:`, `fatal:`, `panic:` or `npm ERR!` — which
  takes in the last line of a Python traceback — and lines that report a non-zero exit code or
  status, or `command not found`. Prose that merely mentions an error mid-sentence is not one.
- **Code**: the content of every fenced block, whatever its language.

Each command and error is one line, cut to `MAX_CHARS`, listed once, in order of appearance.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MAX_CHARS = 300
SHELL = frozenset({"bash", "sh", "zsh", "shell", "fish", "powershell", "ps1", "cmd"})
TRANSCRIPT = frozenset({"console", "shell-session", "terminal", "shellsession"})
_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)")
_FENCE_MARK = re.compile(r"(?:```|~~~)[\w+-]*")  # a fence and its language, anywhere in a line
_PROMPT = re.compile(r"^\s*\$\s+(\S.*)$")
_ERROR = re.compile(
    r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception)|Error|error|ERROR|fatal|FATAL|panic)"
    r"(?:\[[^\]]*\])?:\s*\S|^\s*npm ERR!"
)
_EXIT = re.compile(
    r"\b(?:exit(?:ed)?(?: with)? (?:code|status)|non-zero exit status)\s*:?\s*(\d+)", re.I
)
_NOT_FOUND = re.compile(r"\bcommand not found\b|\bNo such file or directory\b")


def unfenced(text: str) -> str:
    """`text` with its fence markers (and their language tags) as spaces: noise in a text read
    as one line (an episode, a compared line)."""
    return _FENCE_MARK.sub(" ", text)


@dataclass(frozen=True)
class CodeFindings:
    commands: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()  # fenced code, as written

    @property
    def has_code(self) -> bool:
        return bool(self.commands or self.blocks)


@dataclass(frozen=True)
class _Segment:
    fence: str | None  # the block's language ("" untagged), None for text outside any block
    lines: tuple[str, ...]


def find_code(text: str) -> CodeFindings:
    segments = list(_segments(text))
    lines = [line for segment in segments for line in segment.lines]
    return CodeFindings(
        commands=_unique(c for segment in segments for c in _commands(segment)),
        errors=_unique(line.strip() for line in lines if is_error(line)),
        blocks=tuple("\n".join(s.lines) for s in segments if s.fence is not None and s.lines),
    )


def is_error(line: str) -> bool:
    exit_code = _EXIT.search(line)
    if exit_code is not None:
        return exit_code[1] != "0"
    return bool(_ERROR.match(line) or _NOT_FOUND.search(line))


def _segments(text: str) -> Iterator[_Segment]:
    """The text cut at fence markers: plain stretches and fenced blocks, in order."""
    fence: str | None = None
    lines: list[str] = []
    for raw in text.splitlines():
        marker = _FENCE.match(raw)
        if marker is None:
            lines.append(raw)
            continue
        yield _Segment(fence, tuple(lines))
        fence, lines = (marker[2].lower() if fence is None else None), []
    yield _Segment(fence, tuple(lines))  # an unclosed block runs to the end


def _commands(segment: _Segment) -> Iterator[str]:
    pending = ""
    for line in segment.lines:
        command = _command(line, segment.fence)
        if command is None and not pending:
            continue
        joined = f"{pending} {command or line.strip()}".strip()
        if joined.endswith("\\"):
            pending = joined[:-1].rstrip()
            continue
        pending = ""
        yield joined
    if pending:
        yield pending


def _command(line: str, fence: str | None) -> str | None:
    prompt = _PROMPT.match(line)
    if prompt is not None:
        return prompt[1].strip()
    stripped = line.strip()
    if fence in SHELL and stripped and not stripped.startswith("#"):
        return stripped
    return None


def _unique(found: Iterable[str]) -> tuple[str, ...]:
    """Each text once, in order, cut to `MAX_CHARS`."""
    return tuple(dict.fromkeys(text[:MAX_CHARS] for text in found if text))
