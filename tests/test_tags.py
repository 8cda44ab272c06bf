"""Memory tags in a model reply: what is extracted, and that no raw tag survives for the user."""

from __future__ import annotations

import random

import pytest

from bot.memory.notes.tags import (
    TAG_INSTRUCTIONS,
    ExtractedTags,
    extract_tags,
    shown_while_written,
)


def test_a_plain_reply_passes_untouched_apart_from_outer_whitespace() -> None:
    reply = "  Line one\n\n\n\ncode:\n    x = 1  \n"

    assert extract_tags(reply) == ExtractedTags(text="Line one\n\n\n\ncode:\n    x = 1")


def test_each_kind_of_tag_is_extracted_and_stripped() -> None:
    tags = extract_tags(
        "Sure! <memory>Ann prefers tea</memory> Anything else?"
        "<chat-memory>This chat plans the trip</chat-memory>"
        "\n<working-memory>\n- Topic: trip\n- Pending: hotel\n</working-memory>"
    )

    assert tags == ExtractedTags(
        text="Sure! Anything else?",
        memories=("Ann prefers tea",),
        chat_memories=("This chat plans the trip",),
        working_memory="- Topic: trip\n- Pending: hotel",
    )
    assert tags.found


@pytest.mark.parametrize(
    "reply",
    [
        "<MEMORY>Ann prefers tea</MEMORY>",
        "<memory >Ann prefers tea</memory >",
        "<Memory source='chat'>Ann prefers tea</mEmOrY>",
        "< memory>Ann prefers tea</ memory>",
        "<memory>\n  Ann\n  prefers   tea\n</memory>",
        "<memory>- Ann prefers tea</memory>",
        "<memory>Ann prefers tea</chat-memory>",
        "<memory Ann prefers tea</memory>",
    ],
)
def test_sloppy_tags_still_give_one_clean_fact(reply: str) -> None:
    assert extract_tags(reply) == ExtractedTags(text="", memories=("Ann prefers tea",))


def test_underscored_and_unhyphenated_names_count() -> None:
    tags = extract_tags("<chat_memory>a</chat_memory><WorkingMemory>b</WorkingMemory>")

    assert (tags.chat_memories, tags.working_memory) == (("a",), "b")


def test_a_nested_tag_folds_into_one_fact_without_inner_tags() -> None:
    tags = extract_tags("Ok. <memory>a <memory>b</memory></memory> Done.")

    assert tags == ExtractedTags(text="Ok. Done.", memories=("a b",))


def test_a_tag_of_another_kind_nested_inside_belongs_to_the_outer_one() -> None:
    tags = extract_tags("<memory>a <chat-memory>b</chat-memory> c</memory>")

    assert tags == ExtractedTags(text="", memories=("a b c",))


@pytest.mark.parametrize(
    ("reply", "text", "memories", "working"),
    [
        ("Sure. <memory>Ann prefers tea", "Sure.", ("Ann prefers tea",), None),
        ("Sure. <memory>Ann prefers tea</mem", "Sure.", ("Ann prefers tea",), None),
        ("Sure. <memory>Ann prefers tea</memory", "Sure.", ("Ann prefers tea",), None),
        ("Sure. <memory>a <memory>b</memory>", "Sure.", ("a b",), None),
        ("Sure.\n<working-memory>\n- Topic: tea", "Sure.", (), "- Topic: tea"),
    ],
)
def test_an_unclosed_tag_is_stored_and_hidden(
    reply: str, text: str, memories: tuple[str, ...], working: str | None
) -> None:
    assert extract_tags(reply) == ExtractedTags(
        text=text, memories=memories, working_memory=working
    )


@pytest.mark.parametrize(
    "reply",
    [
        "Sure. <",
        "Sure. </",
        "Sure. <m",
        "Sure. <memo",
        "Sure. <MEMORY",
        "Sure. <memory ",
        "Sure. <chat-",
        "Sure. <chat_mem",
        "Sure. <working-mem",
        "Sure. </working-memory",
        "Sure. <memory Ann prefers",
        "Sure. <chat-memory attr='1'",
        "Sure. <memory/>",
        "Sure. </memory>",
        "Sure. <memory></memory>",
        "Sure. <memory>   \n </memory>",
    ],
)
def test_a_truncated_stray_or_empty_tag_vanishes_and_stores_nothing(reply: str) -> None:
    assert extract_tags(reply) == ExtractedTags(text="Sure.")


def test_stray_closing_tags_are_removed_from_the_middle() -> None:
    assert extract_tags("a </memory> b </chat-memory>\nc").text == "a b\nc"


@pytest.mark.parametrize("reply", ["if a < b then", "x <b>bold</b> y", "see <memoir>", "1 <2"])
def test_text_that_only_looks_like_a_tag_is_kept(reply: str) -> None:
    assert extract_tags(reply) == ExtractedTags(text=reply)


@pytest.mark.parametrize(
    ("reply", "text"),
    [
        ("Hi <memory>x</memory> there", "Hi there"),
        ("Hi <memory>x</memory>, Ann", "Hi, Ann"),
        ("tea<memory>x</memory>.", "tea."),
        ("A\n<memory>x</memory>\nB", "A\nB"),
        ("A\n\n<memory>x</memory>\n\nB", "A\n\nB"),
        ("A\n\n<memory>x</memory>\n\n<chat-memory>y</chat-memory>\n\n\nB", "A\n\nB"),
        ("A <memory>x</memory> <memory>y</memory> B", "A B"),
        ("<memory>x</memory>\n\nA", "A"),
    ],
)
def test_whitespace_around_removed_tags_is_tidied(reply: str, text: str) -> None:
    assert extract_tags(reply).text == text


def test_facts_are_folded_deduplicated_and_kept_in_order() -> None:
    tags = extract_tags(
        "<memory>B likes  cats</memory><memory>a likes dogs</memory>"
        "<memory>b likes cats</memory><memory> </memory><chat-memory>B likes cats</chat-memory>"
    )

    assert tags.memories == ("B likes cats", "a likes dogs")
    assert tags.chat_memories == ("B likes cats",)


def test_the_last_non_empty_working_memory_wins_and_is_dedented() -> None:
    tags = extract_tags(
        "<working-memory>old</working-memory> Text "
        "<working-memory>\n    - Topic: tea\n      - green\n    - Pending: none\n</working-memory>"
        "<working-memory>  </working-memory>"
    )

    assert tags.working_memory == "- Topic: tea\n  - green\n- Pending: none"
    assert tags.text == "Text"


def test_a_big_tag_is_handled() -> None:
    snapshot = "\n".join(f"- item {n}: " + "x" * 60 for n in range(200))

    tags = extract_tags(f"Done.<working-memory>{snapshot}</working-memory>")

    assert len(snapshot) > 10_000
    assert tags == ExtractedTags(text="Done.", working_memory=snapshot)


TOPIC_AND_TRIP = "- Topic: tea\n- Pending: trip"
TAGGED_REPLY = (
    "Sure, noted!\n\n<memory>Ann prefers green tea</memory> Her sister is Bea. "
    "<Chat-Memory attr='1'>This chat plans a trip</Chat-Memory>\n"
    "More text here.<memory>a <memory>nested</memory> fact</memory>\n"
    "<working-memory>\n- Topic: tea\n- Pending: trip\n</working-memory>\nBye for now"
)


WHOLE = ("Ann prefers green tea", "a nested fact", "This chat plans a trip", TOPIC_AND_TRIP)


def test_every_truncation_point_leaves_no_tag_fragment_and_stores_only_real_content() -> None:
    cuts = range(len(TAGGED_REPLY) + 1)
    for cut in [*cuts, *random.Random(2).sample(cuts, 40)]:
        tags = extract_tags(TAGGED_REPLY[:cut])
        stored = [*tags.memories, *tags.chat_memories, tags.working_memory or ""]

        assert "<" not in tags.text and ">" not in tags.text, (cut, tags.text)
        assert all(any(f.startswith(s) for f in WHOLE) for s in stored), (cut, stored)
        assert "  " not in tags.text and tags.text == tags.text.strip(), (cut, tags.text)


def test_the_full_tagged_reply() -> None:
    assert extract_tags(TAGGED_REPLY) == ExtractedTags(
        text="Sure, noted!\n\nHer sister is Bea.\nMore text here.\nBye for now",
        memories=("Ann prefers green tea", "a nested fact"),
        chat_memories=("This chat plans a trip",),
        working_memory=TOPIC_AND_TRIP,
    )


def test_random_tag_soup_never_shows_a_tag() -> None:
    tags = ["<memory>", "</memory>", "<chat-memory>", "</CHAT-MEMORY>", "<working-memory>"]
    parts = [*tags, "</working-memory>", "<memory/>", "< memory ", " word ", "\n", "\n\n", "x"]
    endings = ["", "<", "</", "<memo", "<chat", "</working-mem", "<memory"]
    rng = random.Random(7)
    for _ in range(500):
        body = "".join(rng.choice(parts) for _ in range(rng.randint(1, 12)))
        reply = body + rng.choice(endings)

        text = extract_tags(reply).text

        assert "<" not in text and ">" not in text, repr(reply)
        assert "\n\n\n" not in text and text == text.strip(), repr(reply)


def test_the_instructions_name_every_tag_and_what_working_memory_holds() -> None:
    for tag in ("<memory>", "<chat-memory>", "<working-memory>"):
        assert tag in TAG_INSTRUCTIONS
    for word in ("Topic", "Decisions", "Pending", "replaces", "removed before the user"):
        assert word in TAG_INSTRUCTIONS


@pytest.mark.parametrize(
    "reply",
    [
        "Sure! <memory>Ann prefers tea</memory> Anything else?",
        "Done.\n<Chat_Memory kind='x'>The trip is in May</Chat_Memory>\nBye, a < b.",
        "Ok <working-memory>\n- Topic: trip\n</working-memory> <memory/>and <  / memory>",
    ],
)
def test_no_beginning_of_a_reply_shows_a_tag_or_what_it_holds(reply: str) -> None:
    final = extract_tags(reply).text
    for end in range(len(reply) + 1):
        shown = shown_while_written(reply[:end])
        assert "memory" not in shown.lower() and "tea" not in shown, (end, shown)
        assert "May" not in shown and "Topic" not in shown, (end, shown)
        assert "<" not in shown.replace("a < b", ""), (end, shown)
    assert shown_while_written(reply) == final


def test_a_less_than_sign_is_held_back_only_while_it_may_open_a_tag() -> None:
    assert shown_while_written("x <") == "x"
    assert shown_while_written("x < 3 and y <w") == "x < 3 and y"  # <w…: working-memory?
    assert shown_while_written("x < 3 and y <b") == "x < 3 and y <b"
