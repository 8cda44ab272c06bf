"""A document's text: which files are text, PDF or an image (by mime type and extension), and
their text had from the bytes — text files decoded (`bot.storage.lines` says what is text),
PDFs through pypdf, page by page. What cannot be had raises `NoText` with the reason in words.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

from bot.storage.lines import decode_text

DocumentKind = Literal["text", "pdf", "image"]

# `text/*` is text; so are these mime types and extensions (a client may send source code as
# application/octet-stream)
TEXT_MIMES = frozenset(
    {
        "application/json", "application/ld+json", "application/x-ndjson", "application/xml",
        "application/javascript", "application/x-javascript", "application/typescript",
        "application/x-python", "application/x-python-code", "application/x-sh",
        "application/x-shellscript", "application/sql", "application/x-yaml", "application/yaml",
        "application/toml", "application/x-tex", "application/x-subrip", "image/svg+xml",
    }
)  # fmt: skip
_EXTENSIONS = """
    txt text md markdown rst org adoc tex csv tsv json jsonl ndjson yaml yml toml ini cfg conf
    env properties log xml html htm svg srt vtt sql sh bash zsh fish ps1 bat py pyi ipynb js mjs
    cjs ts tsx jsx css scss less java kt kts scala groovy gradle c h cc cpp cxx hpp hh cs go rs
    rb php pl pm lua r jl swift m mm dart ex exs erl hs ml clj lisp el vim nix tf proto graphql
    gql mk cmake patch diff
"""
TEXT_EXTENSIONS = frozenset(_EXTENSIONS.split())
UNNAMED = frozenset({"", "application/octet-stream"})  # no claim either way: read it and see

NOT_TEXT = "it isn't text (not UTF-8 or UTF-16)"
EMPTY = "it holds no text"
NO_TEXT_LAYER = "it has no text layer (a scan or pictures of pages)"
ENCRYPTED = "it is encrypted"
BROKEN = "it isn't a PDF I can open (damaged, or not a PDF)"


class NoText(Exception):
    """The document's text cannot be had; the message says why, in words for the user."""


@dataclass(frozen=True)
class Extracted:
    text: str
    pages: int | None = None  # a PDF's

    @property
    def size(self) -> str:
        """How big it is, as the label says: "12 pages", "40 lines"."""
        if self.pages is not None:
            return _count(self.pages, "page")
        return _count(self.text.count("\n") + 1, "line")


def kind_of(file_name: str, mime_type: str) -> DocumentKind | None:
    """What a document is, by its mime type and extension; None: a type the bot cannot read."""
    mime = mime_type.lower().partition(";")[0].strip()
    ext = PurePath(file_name.lower()).suffix.removeprefix(".")
    if mime == "application/pdf" or ext == "pdf":
        return "pdf"
    if mime.startswith("image/") and mime not in TEXT_MIMES:
        return "image"
    if mime.startswith("text/") or mime in TEXT_MIMES or ext in TEXT_EXTENSIONS:
        return "text"
    if mime in UNNAMED and not ext:
        return "text"  # a README, a Makefile: the bytes decide
    return None


def extract(data: bytes, kind: DocumentKind) -> Extracted:
    """The text of a text file or a PDF; `NoText` saying why there is none."""
    return _pdf(data) if kind == "pdf" else _text(data)


def _text(data: bytes) -> Extracted:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with its byte order mark
        try:
            data = data.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            raise NoText(NOT_TEXT) from None
    text = decode_text(data.removeprefix(b"\xef\xbb\xbf"))
    if text is None:
        raise NoText(NOT_TEXT)
    text = text.replace("\r\n", "\n").strip("\n")
    if not text.strip():
        raise NoText(EMPTY)
    return Extracted(text)


def _pdf(data: bytes) -> Extracted:
    from pypdf import PdfReader  # imported at the first PDF, not at every start
    from pypdf.errors import DependencyError, FileNotDecryptedError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise NoText(ENCRYPTED)
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except (FileNotDecryptedError, DependencyError):  # a password, or AES without its library
        raise NoText(ENCRYPTED) from None
    except NoText:
        raise
    except Exception:  # pypdf's errors on a damaged file are many (its own, ValueError, KeyError …)
        raise NoText(BROKEN) from None
    if not any(pages):
        raise NoText(NO_TEXT_LAYER)
    text = "\n\n".join(f"## Page {n}\n\n{page}" for n, page in enumerate(pages, 1) if page)
    return Extracted(text, pages=len(pages))


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
