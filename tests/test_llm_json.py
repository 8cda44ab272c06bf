"""Reading the consolidation model's answer: fenced JSON, JSON in prose, field-by-field, prose."""

from __future__ import annotations

import json

import pytest

from bot.memory.upkeep.answers import ConsolidationResult, parse_consolidation

ENTRY = "[2026-11-21 10:30] Ann planned a trip to Lisbon."
MEMORY = "# Memory\n- Ann lives in Porto\n- Ann likes green tea"


def test_plain_json() -> None:
    text = json.dumps({"history_entry": ENTRY, "memory_update": MEMORY})

    assert parse_consolidation(text) == ConsolidationResult(ENTRY, MEMORY)


@pytest.mark.parametrize("fence", ["```json", "```", "```JSON "])
def test_fenced_json(fence: str) -> None:
    text = f"{fence}\n{json.dumps({'history_entry': ENTRY, 'memory_update': MEMORY})}\n```"

    assert parse_consolidation(text) == ConsolidationResult(ENTRY, MEMORY)


def test_json_inside_prose() -> None:
    body = json.dumps({"history_entry": ENTRY, "memory_update": MEMORY}, indent=2)
    text = f"Sure! Here is the consolidation:\n{body}\nLet me know if you need more."

    assert parse_consolidation(text) == ConsolidationResult(ENTRY, MEMORY)


def test_braces_and_escaped_quotes_inside_strings_do_not_end_the_block() -> None:
    tricky = 'Ann wrote `{"a": {"b": 1}}` and said "} done {"'
    body = json.dumps({"history_entry": tricky, "memory_update": "- uses {braces}\\"})
    text = f"Result: {body} — and a stray }} afterwards {{"

    assert parse_consolidation(text) == ConsolidationResult(tricky, "- uses {braces}\\")


def test_an_escaped_quote_before_a_brace_does_not_end_the_object() -> None:
    real = json.dumps({"history_entry": 'Ann typed \\"} and left', "memory_update": MEMORY})
    decoy = json.dumps({"history_entry": "an example entry"})

    result = parse_consolidation(f"{real}\nFor instance: {decoy}")

    assert result == ConsolidationResult('Ann typed \\"} and left', MEMORY)


def test_an_earlier_object_without_the_fields_is_skipped() -> None:
    text = 'Format: {"type": "object"}. Answer: ' + json.dumps({"history_entry": ENTRY})

    assert parse_consolidation(text) == ConsolidationResult(ENTRY, None)


def test_raw_newlines_inside_strings_are_accepted() -> None:
    text = '{"history_entry": "one\ntwo", "memory_update": "- a\n- b"}'

    assert parse_consolidation(text) == ConsolidationResult("one\ntwo", "- a\n- b")


def test_field_by_field_when_the_object_is_broken() -> None:
    text = (
        '{"history_entry": "Ann said \\"hi\\"\\nthen left", '
        '"memory_update": "# Memory\\n- Ann says \\"hi\\" \\u00e0 la fran\\u00e7aise", '
        "oops this is not json}"
    )

    result = parse_consolidation(text)

    assert result.history_entry == 'Ann said "hi"\nthen left'
    assert result.memory_update == '# Memory\n- Ann says "hi" à la française'


def test_field_by_field_with_an_invalid_escape_still_unescapes_the_rest() -> None:
    text = '{"history_entry": "path C:\\q \\"x\\"\\nnext", broken'

    assert parse_consolidation(text).history_entry == 'path C:\\q "x"\nnext'


def test_an_unterminated_value_is_not_taken() -> None:
    """A cut-off answer must never become the new MEMORY.md."""
    text = '{"history_entry": "Ann left.", "memory_update": "# Memory\\n- Ann lives in'

    assert parse_consolidation(text) == ConsolidationResult("Ann left.", None)


@pytest.mark.parametrize("value", [42, None, [], {}, "", "   ", "```\n```"], ids=repr)
def test_non_text_or_empty_values_are_ignored(value: object) -> None:
    text = json.dumps({"history_entry": ENTRY, "memory_update": value})

    assert parse_consolidation(text) == ConsolidationResult(ENTRY, None)


@pytest.mark.parametrize(
    "text",
    [
        "I could not summarise this conversation, sorry.",
        "",
        "Here you go: {not json at all}",
        json.dumps(["history_entry", "memory_update"]),
        json.dumps({"summary": "the wrong field names"}),
    ],
)
def test_prose_or_foreign_json_gives_nothing(text: str) -> None:
    result = parse_consolidation(text)

    assert result == ConsolidationResult(None, None)
    assert result.is_empty


# ----------------------------------------------------------------------------- real models' shapes
# What Qwen2.5 1.5B answered when run through the bot: a fenced memory_update, a list entry.


def test_a_fence_inside_memory_update_never_reaches_the_text() -> None:
    update = "```markdown\n# About me\n- Lives in Porto\n```"
    text = "```json\n" + json.dumps({"history_entry": ENTRY, "memory_update": update}) + "\n```"

    result = parse_consolidation(text)

    assert result == ConsolidationResult(ENTRY, "# About me\n- Lives in Porto")


def test_a_list_is_its_items_one_a_line() -> None:
    text = (
        json.dumps(
            {
                "history_entry": ["[2026-11-24 09:00] Met Ann.", "Planned a trip."],
                "memory_update": ["Lives in Porto", "- Likes tea"],
            }
        )
        + "\nHope this helps!"
    )

    result = parse_consolidation(text)

    assert result.history_entry == "[2026-11-24 09:00] Met Ann.\nPlanned a trip."
    assert result.memory_update == "- Lives in Porto\n- Likes tea"


def test_an_object_is_its_keys_as_headings() -> None:
    text = json.dumps(
        {"history_entry": ENTRY, "memory_update": {"People": ["Ann is my sister"], "Home": "Porto"}}
    )

    assert parse_consolidation(text).memory_update == (
        "## People\n- Ann is my sister\n\n## Home\nPorto"
    )


def test_the_lines_the_model_drops_on_purpose_are_named() -> None:
    text = json.dumps(
        {
            "history_entry": ENTRY,
            "memory_update": "- Lives in Porto",
            "removed": ["- Lives in Lyon"],
        }
    )

    assert parse_consolidation(text).removed == ("- Lives in Lyon",)


def test_a_fenced_value_found_field_by_field_is_unfenced() -> None:
    text = '{"history_entry": "' + ENTRY + '", "memory_update": "```\\n- Lives in Porto\\n```" oops'

    assert parse_consolidation(text).memory_update == "- Lives in Porto"


def test_a_heading_of_the_request_echoed_back_is_dropped() -> None:
    update = "## Current Long-term Memory\n# About me\n- My name is Dana."
    text = json.dumps({"history_entry": ENTRY, "memory_update": update})

    assert parse_consolidation(text).memory_update == "# About me\n- My name is Dana."


@pytest.mark.parametrize(
    "echo", ["(empty)", "empty", "Empty", "## Current Long-term Memory\n(empty)", "- [forgotten]"]
)
def test_the_empty_memorys_mark_echoed_back_is_no_memory(echo: str) -> None:
    text = json.dumps({"history_entry": ENTRY, "memory_update": echo})

    assert parse_consolidation(text).memory_update is None


def test_a_fact_that_says_empty_among_others_is_kept() -> None:
    update = "- The fridge is empty on Sundays\n(empty)"
    text = json.dumps({"history_entry": ENTRY, "memory_update": update})

    assert parse_consolidation(text).memory_update == "- The fridge is empty on Sundays"
