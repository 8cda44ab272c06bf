"""Offline token counting: works without a network, counts messages and tool calls."""

from __future__ import annotations

import random

from bot.llm.tokens import LineTokens, TokenCounter, at_least
from bot.models import ChatMessage, ToolCall


def test_counts_offline_with_the_bundled_encoding() -> None:
    counter = TokenCounter()
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count("<|endoftext|>") > 1  # special tokens are plain text here


def test_messages_cost_their_text_plus_overhead_and_tool_calls() -> None:
    counter = TokenCounter()
    plain = [ChatMessage(role="user", content="hello world")]
    with_call = [
        ChatMessage(
            role="assistant",
            content=None,
            tool_calls=(ToolCall(id="c1", name="current_time", arguments='{"tz": "UTC"}'),),
        )
    ]
    assert counter.count_messages(plain) == 2 + 4
    assert counter.count_messages(with_call) > 4
    assert counter.count_messages(plain * 10) == 10 * counter.count_messages(plain)


def test_line_tokens_never_count_below_the_exact_count() -> None:
    exact = TokenCounter().count
    lines = LineTokens(exact)
    rng = random.Random(5)
    pieces = ["hello", " world", ".", "!", "  ", "\t", "```", "- ", "# ", "[08:00]", "User:", "|"]
    pieces += ["émoji 😀", "12345", "'s", "\r", "", "…", "a.b", ":", "    code", "\u00a0"]
    for _ in range(3000):
        parts = [
            "".join(rng.choices(pieces, k=rng.randint(0, 6))) for _ in range(rng.randint(1, 6))
        ]
        text = "\n".join(parts)
        assert exact(text) <= lines(text) <= exact(text) + 2 * len(parts), repr(text)


def test_at_least_never_counts_above_the_exact_count() -> None:
    exact = TokenCounter().count
    rng = random.Random(7)
    pieces = ["hello", " world", ".", "!", "  ", "\t", "```", "- ", "# ", "[08:00]", "User:", "|"]
    pieces += ["émoji 😀", "12345", "'s", "\r", "\n", "…", "a.b", ":", "\u00a0", "\u3000", "x"]
    pieces += ["\x1c", "\x1f", "\x85", "\u2028", "'ll", "日本語", "-->", "(a)", "\u200b", "\x0b"]
    for _ in range(5000):
        text = "".join(rng.choices(pieces, k=rng.randint(0, 12)))
        assert at_least(text) <= exact(text), repr(text)
    assert at_least("- [L3-L9] User: where are the keys?") == 7


def test_line_tokens_remember_each_line() -> None:
    seen: list[str] = []

    def count(text: str) -> int:
        seen.append(text)
        return len(text)

    lines = LineTokens(count)
    assert lines("ab\ncd") == 2 + 2 + 1
    assert lines("ab\ncd\nef") == 8
    assert seen == ["ab", "cd", "ef"]
