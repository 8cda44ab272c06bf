"""One copy per prompt: a told fact, its note line and its exchange each appear at most once
across `# Memory`, the items beside it and `# Relevant Memory`; memory_search shows a text once."""

from __future__ import annotations

from bot.app import App
from bot.memory.recall.overlap import Shown, flat
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.talk import say, system_text, tool_result

FACT = "The spare key is under the blue pot."
SAID = "My spare key is under the blue pot."
CONSOLIDATED = '{"history_entry": "[2026-11-24 09:00] Where the key is.", "memory_update": null}'


async def tell_and_start_over(app: App, fake: FakeOpenAI) -> None:
    fake.script(Reply(f"Noted. <memory>{FACT}</memory>"), Reply(CONSOLIDATED))
    await say(app, SAID)
    await say(app, "/new")


async def test_a_told_fact_its_note_line_and_its_exchange_are_each_shown_once(
    app: App, fake_openai: FakeOpenAI
) -> None:
    await tell_and_start_over(app, fake_openai)
    fake_openai.script(Reply("Under the blue pot."))

    await say(app, "where is my spare key? the blue pot?")

    prompt = str(system_text(fake_openai.requests[-1]))
    assert prompt.count(FACT.removesuffix(".")) == 1  # MEMORY.md, not again as an item or hit
    assert prompt.count(SAID) == 1  # today's note line, not again as a statement or exchange
    assert prompt.lower().count("blue pot") == 2


async def test_memory_search_shows_each_text_once(app: App, fake_openai: FakeOpenAI) -> None:
    await tell_and_start_over(app, fake_openai)

    found = await tool_result(app, fake_openai, "memory_search", {"query": "spare key blue pot"})

    assert found.count(FACT.removesuffix(".")) == 1
    assert found.count(SAID.removesuffix(".")) == 1


def test_texts_are_compared_as_memory_writes_them() -> None:
    shown = Shown(["[09:15] User: My cat is called Pixel | Assistant: Nice name!"])

    assert shown.holds("User: My cat is called Pixel\nAssistant: Nice name!")  # its exchange
    assert shown.holds("- my cat is called pixel.")  # a statement made of it
    assert not shown.holds("My dog is called Pixel")
    assert not shown.holds("yes")  # too short to say
    assert Shown(["- My cat is called Pixel"]).holds(
        "User: My cat is called Pixel. | Assistant: Ok"
    )
    assert not Shown().holds("a new and rather short fact")
    chunk = "## Pets\n- My cat is called Pixel\n- The dog is Rex, a terrier\n- The fish died"
    assert not shown.holds(chunk)  # shares a line, and says more
    assert flat("```bash\npip install rich\n```") == "pip install rich"


def test_held_lines_are_found_inside_a_text_whatever_their_length() -> None:
    lines = [f"User: Turn {n}: what about the garden plan number {n}" for n in range(40)]
    shown = Shown(["Antidisestablishment", "Basil thrives well", *lines])

    assert shown.holds("Here: user: turn 7: what about the garden plan number 7. Ok")
    assert not shown.holds("user: turn 7: what about the garden plan number 8, and more")
    assert shown.holds("what about the garden plan number 7")  # a part of a held line
    assert not shown.holds("what about the kitchen plan number 7")
    assert shown.holds("Said: antidisestablishment | ok")  # a one-word line
    assert shown.holds("Noted: basil thrives well!")  # a three-word line, its end glued
    assert not shown.holds("Noted: basil thrives in the sun on the balcony")
    assert Shown(["Basilicum thrives"]).holds("Yes: basilicum thrives")  # a two-word line


def test_a_layer_holds_what_is_under_it_and_adds_nothing_to_it() -> None:
    base = Shown(["- My cat is called Pixel", "User: Turn 7: what about the garden plan"])
    turn = base.layer()
    turn.add("- The spare key is under the blue pot")
    pack = turn.layer()
    pack.add("- The dog is Rex, a terrier")

    assert pack.holds("my cat is called pixel")  # two layers down
    assert pack.holds("Here: user: turn 7: what about the garden plan. Ok")  # found inside
    assert pack.holds("The spare key is under the blue pot | the dog is Rex, a terrier")
    assert turn.holds("the spare key is under the blue pot")
    assert not turn.holds("the dog is Rex, a terrier")  # added above it
    assert not base.holds("the spare key is under the blue pot")
    pack.add("- My cat is called Pixel")  # held below: not added again
    assert not turn.holds("The dog is Rex, a terrier")
