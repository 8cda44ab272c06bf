"""What the bot or the model writes, shown as written by a markdown renderer: markdown is
rendered, HTML is not, and a line break stays a line break.

`plain` is the text without its markup, for a line that shows none (the console's spinner).
`literal_tags` puts a backslash before each `<` that would start HTML (`<text>`, `<div>`,
`List<String>`, a comment, an HTML block) or an email link (`<ann@x.org>`), so a renderer shows
it as text; `hard_breaks` turns each single line break in prose into a hard one, for a renderer
that would join the lines (a terminal's; Telegram's keeps them). Code keeps its text as is. Both
ask the CommonMark parser which characters are meant (pyromark, telegramify-markdown's own).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import pyromark
from telegramify_markdown.converter import STANDARD_OPTIONS

Events = list[tuple[Any, dict[str, int]]]
_BLOCKS = ("Paragraph", "Heading", "Item", "CodeBlock", "BlockQuote")
_OPENING = re.compile(r"(?<!\S)[*_`~]+(?=\S)")  # a marker whose closing one is not written yet


def plain(markdown: str) -> str:
    """`markdown`'s text without its syntax: `**a**` is `a`, `# Head` is `Head`, a list item
    starts with `• `, each block ends its line; a marker not closed yet (an answer still being
    written: `the **impor`) is left out too. HTML stays as written (`literal_tags`)."""
    pieces: list[str] = []
    for event, _ in _events(literal_tags(markdown)):
        if event in ("SoftBreak", "HardBreak"):
            pieces.append("\n")
        elif not isinstance(event, dict):
            continue
        elif (text := event.get("Text", event.get("Code"))) is not None:
            pieces.append(str(text))
        elif event.get("Start") == "Item":
            pieces.append("• ")
        elif _block_end(event.get("End")):
            pieces.append("\n")
    return _OPENING.sub("", "".join(pieces)).strip("\n")


def _block_end(end: Any) -> bool:
    name = next(iter(end), None) if isinstance(end, dict) else end
    return name in _BLOCKS


def literal_tags(markdown: str) -> str:
    """`markdown` with every HTML-looking tag shown as text. Each pass escapes the tags the
    parser still sees; an escaped `<` never starts one again, so this ends."""
    return _escaped(markdown, _tag_starts)


def hard_breaks(markdown: str) -> str:
    """`markdown` with each soft line break (a single newline in a paragraph) made hard."""
    if "\n" not in markdown:
        return markdown
    return _escape_at(
        markdown, [where["start"] for event, where in _events(markdown) if event == "SoftBreak"]
    )


def _escaped(markdown: str, offsets_of: Callable[[str], list[int]]) -> str:
    while offsets := offsets_of(markdown):
        markdown = _escape_at(markdown, offsets)
    return markdown


def _tag_starts(markdown: str) -> list[int]:
    """UTF-8 offsets of the `<` that begin HTML or an email autolink in `markdown`."""
    if "<" not in markdown:
        return []
    source = markdown.encode("utf-8")
    return sorted(
        {
            where["start"]
            for event, where in _events(markdown)
            if _is_tag(event) and source[where["start"] : where["start"] + 1] == b"<"
        }
    )


def _is_tag(event: Any) -> bool:
    if not isinstance(event, dict):
        return False
    if "Html" in event or "InlineHtml" in event:
        return True
    link = event.get("Start")
    return isinstance(link, dict) and link.get("Link", {}).get("link_type") == "Email"


def _events(markdown: str) -> Events:
    events: Any = pyromark.events_with_range(markdown, options=STANDARD_OPTIONS)
    return list(events)


def _escape_at(markdown: str, offsets: list[int]) -> str:
    """A backslash inserted before each UTF-8 byte offset of `markdown`."""
    if not offsets:
        return markdown
    source = markdown.encode("utf-8")
    bounds = [0, *sorted(offsets), len(source)]
    return b"\\".join(source[a:b] for a, b in itertools.pairwise(bounds)).decode("utf-8")
