"""Query terms: free text made into a safe FTS5 MATCH expression, and the terms a snippet seeks.

User text is never FTS syntax: words are extracted (letters and digits only, so `"`, `*`, `:`,
`NEAR(`, `AND`, `-` lose any meaning), lowercased, stripped of common English stop words and
of single letters (the "s" of "Daniel's", the "t" of "can't": as a term, a snippet would seek
every word that starts with it), deduplicated, capped in number, each double-quoted, and
ORed. A query with no word left finds nothing by keyword; it never raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MAX_TERMS = 16
WORD = re.compile(r"[^\W_]+", re.UNICODE)  # a word: a run of letters and digits
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)  # one letter, not a digit
_STOP_WORDS = """
a about an and are as at be been but by can could did do does for from had has have he her his
how i if in into is it its me my no not of on or our she so than that the their them then there
these they this to too was we were what when where which who whom why will with would you your
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())


def query_terms(text: str) -> list[str]:
    """The distinct words of `text` worth searching for, in order; stop words and single
    letters only when nothing else is left."""
    words = list(dict.fromkeys(word.lower() for word in WORD.findall(text)))
    kept = [word for word in words if word not in STOP_WORDS and not _LETTER.fullmatch(word)]
    return (kept or words)[:MAX_TERMS]


def fts_expression(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression ORing the terms (words from `query_terms`), each quoted."""
    return " OR ".join(f'"{term}"' for term in terms)


def expression_terms(expression: str) -> list[str]:
    """The words of an `fts_expression`, in order: for an engine that is not FTS5."""
    return expression.split('"')[1::2]
