"""Offline token counting: works without a network, counts messages and tool calls."""

from __future__ import annotations

from bot.llm.tokens import TokenCounter
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
