"""Memory receipts with buttons: Undo, Edit and Forget under what the bot stored, pressed in a
real Telegram client (the fake Bot API's callback queries), and their text form at the console."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from bot.app import App
from bot.models import ChatType
from bot.settings import MemorySettings
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls
from tests.fakes.telegram_api import FakeTelegram, SentMessage
from tests.harness import FRIEND, OWNER, STRANGER, make_settings, running_bot, started_app
from tests.talk import RecordingReplier, message, system_text, write

ON = MemorySettings(receipts=True)
OTHER_FRIEND = 4004
GROUP = -500


def memory_md(workspace: Path) -> str:
    path = workspace / "memory" / "MEMORY.md"
    return path.read_text(encoding="utf-8") if path.exists() else ""


async def stored_with_receipt(tg: FakeTelegram, openai: FakeOpenAI, fact: str) -> SentMessage:
    """The owner says something the model keeps; the receipt under the reply."""
    openai.script(Reply(f"Got it.<memory>{fact}</memory>"))
    tg.push_text(OWNER, OWNER, "please keep this in mind")
    reply, receipt = await tg.wait_for_messages(OWNER, 2)
    assert reply.text == "Got it."
    return receipt


async def receipt_in(tg: FakeTelegram, chat: int) -> SentMessage:
    """The first message with buttons sent to `chat`, once there is one."""
    count = 1
    while not (keyed := [m for m in await tg.wait_for_messages(chat, count) if m.buttons]):
        count = len(tg.sent_messages(chat)) + 1
    return keyed[0]


async def press(tg: FakeTelegram, receipt: SentMessage, label: str, *, user: int = OWNER) -> str:
    data = dict(receipt.buttons)[label]
    query = tg.push_press(receipt.chat_id if isinstance(receipt.chat_id, int) else 0,
                          user, receipt.message_id, data)  # fmt: skip
    return await tg.wait_for_press_answer(query)


def now_says(tg: FakeTelegram, receipt: SentMessage) -> SentMessage:
    [current] = [m for m in tg.sent_messages(receipt.chat_id) if m.message_id == receipt.message_id]
    return current


async def next_prompt(tg: FakeTelegram, openai: FakeOpenAI, count: int) -> str:
    openai.script(Reply("ok"))
    tg.push_text(OWNER, OWNER, "what do you know?")
    await tg.wait_for_messages(OWNER, count)
    return system_text(openai.requests[-1])


async def test_a_stored_fact_gets_a_receipt_with_three_small_buttons(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai, memory=ON)
    async with running_bot(settings, fake_telegram):
        receipt = await stored_with_receipt(fake_telegram, fake_openai, "Ann lives in Oslo")
    assert receipt.text == "Saved to memory: Ann lives in Oslo"
    assert [label for label, _ in receipt.buttons] == ["Undo", "Edit", "Forget"]
    assert all(len(data.encode()) <= 64 for _, data in receipt.buttons)
    assert "- Ann lives in Oslo" in memory_md(tmp_path / "ws")


async def test_undo_removes_the_fact_and_the_receipt_says_so(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai, memory=ON)
    async with running_bot(settings, fake_telegram):
        receipt = await stored_with_receipt(fake_telegram, fake_openai, "Ann lives in Oslo")
        answered = await press(fake_telegram, receipt, "Undo")
        edited = now_says(fake_telegram, receipt)
        prompt = await next_prompt(fake_telegram, fake_openai, 3)
        again = await press(fake_telegram, receipt, "Forget")
    assert answered == edited.text == "Undone: “Ann lives in Oslo” is no longer in memory."
    assert edited.buttons == []  # answered in place: the buttons are gone
    assert "Oslo" not in memory_md(tmp_path / "ws")
    assert "Oslo" not in prompt
    assert again == "That was already undone."
    assert "Oslo" not in (tmp_path / "ws" / "state" / "receipts.json").read_text()


async def test_edit_takes_the_next_message_as_the_new_text(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai, memory=ON)
    async with running_bot(settings, fake_telegram):
        receipt = await stored_with_receipt(fake_telegram, fake_openai, "Ann lives in Oslo")
        await press(fake_telegram, receipt, "Edit")
        asked = now_says(fake_telegram, receipt).text
        fake_telegram.push_text(OWNER, OWNER, "Ann lives in Bergen")
        messages = await fake_telegram.wait_for_messages(OWNER, 4)  # the change, its receipt
        prompt = await next_prompt(fake_telegram, fake_openai, 5)
    assert asked.startswith("Send me the new text for “Ann lives in Oslo”")
    assert messages[2].text == "Changed in memory: “Ann lives in Oslo” → “Ann lives in Bergen”."
    assert messages[3].text == "Saved to memory: Ann lives in Bergen"
    assert fake_openai.calls == 2  # the new text went to memory, not to the model
    text = memory_md(tmp_path / "ws")
    assert "- Ann lives in Bergen" in text and "Oslo" not in text
    assert "Ann lives in Bergen" in prompt and "Oslo" not in prompt


async def test_forget_removes_the_text_everywhere(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai, memory=ON)
    async with running_bot(settings, fake_telegram):
        receipt = await stored_with_receipt(fake_telegram, fake_openai, "Ann lives in Oslo")
        answered = await press(fake_telegram, receipt, "Forget")
        edited = now_says(fake_telegram, receipt)
        prompt = await next_prompt(fake_telegram, fake_openai, 3)
    assert answered.startswith("Forgot it")
    assert edited.text.startswith("Forgot ") and "/undo within 10 minutes" in edited.text
    assert "Oslo" not in memory_md(tmp_path / "ws")
    assert "Oslo" not in prompt
    assert "Oslo" not in (tmp_path / "ws" / "state" / "receipts.json").read_text()  # no copy


async def test_a_stranger_and_the_wrong_user_are_refused(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        tmp_path / "ws",
        telegram=fake_telegram,
        openai=fake_openai,
        memory=ON,
        allowed_user_ids=(FRIEND, OTHER_FRIEND),
    )
    async with running_bot(settings, fake_telegram):
        fake_openai.script(Reply("Sure.<chat-memory>we meet on Fridays</chat-memory>"))
        fake_telegram.push_text(
            GROUP,
            FRIEND,
            "@mnemo_test_bot we always meet at the end of the week",
            chat_type="group",
        )
        receipt = await receipt_in(fake_telegram, GROUP)
        stranger = await press(fake_telegram, receipt, "Undo", user=STRANGER)
        other = await press(fake_telegram, receipt, "Forget", user=OTHER_FRIEND)
        unchanged = now_says(fake_telegram, receipt)
        owner = await press(fake_telegram, receipt, "Undo", user=OWNER)
    refusal = "Only the person who said this, or an owner, can change it."
    assert stranger == other == refusal
    assert unchanged.text == "Saved to memory: we meet on Fridays" and unchanged.buttons
    assert owner.startswith("Undone")


async def test_a_button_whose_data_was_tampered_with_does_nothing(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai, memory=ON)
    async with running_bot(settings, fake_telegram):
        receipt = await stored_with_receipt(fake_telegram, fake_openai, "Ann lives in Oslo")
        query = fake_telegram.push_press(OWNER, OWNER, receipt.message_id, "rc:00000000:f")
        answered = await fake_telegram.wait_for_press_answer(query)
    assert answered.startswith("That receipt is too old")
    assert "- Ann lives in Oslo" in memory_md(tmp_path / "ws")


async def test_receipts_off_store_without_a_receipt(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    off = MemorySettings(receipts=False)
    settings = make_settings(
        tmp_path / "ws", telegram=fake_telegram, openai=fake_openai, memory=off
    )
    async with running_bot(settings, fake_telegram):
        fake_openai.script(Reply("Got it.<memory>Ann lives in Oslo</memory>"), Reply("ok"))
        fake_telegram.push_text(OWNER, OWNER, "please keep this in mind")
        fake_telegram.push_text(OWNER, OWNER, "thanks")
        messages = await fake_telegram.wait_for_messages(OWNER, 2)
    assert [m.text for m in messages] == ["Got it.", "ok"]
    assert "- Ann lives in Oslo" in memory_md(tmp_path / "ws")


async def test_the_console_shows_the_receipt_as_text_commands_that_work(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=None, openai=fake_openai, memory=ON)
    async with started_app(settings) as app:
        replier = await said(app, "/remember Ann has a cat")
        [receipt] = replier.receipts
        undo = receipt.buttons[0].command
        assert undo.startswith("/receipt ") and undo.endswith(" undo")
        assert receipt.as_text().splitlines()[1].startswith(f"Undo: {undo} · Edit: /receipt ")
        addressed = undo.replace("/receipt", "/receipt@mnemo_test_bot")
        stranger = await said(app, addressed, user=FRIEND)
        done = await said(app, undo)
    assert replier.sent == []  # the receipt is the answer
    assert receipt.text == "Saved to memory: Ann has a cat"
    assert stranger.sent == ["Only the person who said this, or an owner, can change it."]
    assert done.sent == ["Undone: “Ann has a cat” is no longer in memory."]
    assert "cat" not in memory_md(tmp_path / "ws")


async def test_a_line_the_memory_tools_wrote_gets_a_receipt_too(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=None, openai=fake_openai, memory=ON)
    write(tmp_path / "ws", "MEMORY.md", "- Ann lives in Oslo\n")
    fake_openai.script(
        ToolCalls([("memory_edit", {"old": "Oslo", "new": "- Ann lives in Bergen"})]),
        Reply("Fixed."),
    )
    async with started_app(settings) as app:
        replier = await said(app, "I moved to Bergen, fix that")
        [receipt] = replier.receipts
        done = await said(app, receipt.buttons[0].command)
    assert replier.sent == ["Fixed."]
    assert receipt.text == "Saved to memory: Ann lives in Bergen"
    assert done.sent == ["Undone: “Ann lives in Bergen” is no longer in memory."]
    assert "Bergen" not in memory_md(tmp_path / "ws")


async def test_a_quote_gets_a_keep_button_that_only_an_owner_may_press(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=None, openai=fake_openai, memory=ON)
    fake_openai.script(Reply("Done. <chat-memory>The boat moved to pier nine</chat-memory>"))
    async with started_app(settings) as app:
        said_on = message("the boat is at the far pier", at=app.now(), user=FRIEND, chat=GROUP)
        replier = RecordingReplier()
        await app.router.handle(replace(said_on, forwarded=True), replier)
        [receipt] = replier.receipts
        keep = receipt.buttons[0].command
        friend = await said(app, keep, user=FRIEND, chat=GROUP)
        owner = await said(app, keep, user=OWNER, chat=GROUP)
    assert receipt.text.startswith("Kept as a quote, not as a fact: “The boat moved to pier nine”")
    assert [b.label for b in receipt.buttons] == ["Keep as a fact"]
    assert friend.sent == ["Only an owner can keep quoted material as a fact."]
    assert owner.sent == ["Kept in memory as a fact: “The boat moved to pier nine”."]
    memory = "".join(p.read_text() for p in (tmp_path / "ws" / "memory").rglob("MEMORY.md"))
    assert "The boat moved to pier nine" in memory


async def said(
    app: App, text: str, *, user: int = OWNER, chat: int | None = None
) -> RecordingReplier:
    replier = RecordingReplier()
    where = OWNER if chat is None else chat
    kind: ChatType = "private" if chat is None else "group"
    inbound = message(text, at=app.now(), user=user, chat=where, chat_type=kind)
    await app.router.handle(inbound, replier)
    return replier


# ----------------------------------------------------------------------------- Undo puts back


def statuses(workspace: Path) -> dict[str, str]:
    """Each semantic item's text → its status."""
    path = workspace / "memory" / "items" / "semantic.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {str(item["text"]): str(item["status"]) for item in lines}


async def undo_last(app: App, replier: RecordingReplier) -> list[str]:
    """Press Undo (as its text command) on the last receipt `replier` got."""
    return (await said(app, replier.receipts[-1].buttons[0].command)).sent


async def test_undo_of_a_memory_edit_puts_the_old_line_back_current(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=ON)
    fake_openai.script(
        ToolCalls([("memory_edit", {"old": "Oslo", "new": "Ann lives in Bergen"})]),
        Reply("Fixed."),
    )
    async with started_app(settings) as app:
        await said(app, "/remember Ann lives in Oslo")
        edited = await said(app, "Ann lives in Bergen now, fix that")
        assert "- Ann lives in Bergen" in memory_md(workspace) and "Oslo" not in memory_md(
            workspace
        )
        done = await undo_last(app, edited)
        prompt = await next_prompt_at(app, fake_openai)

    assert done == ["Undone: “Ann lives in Bergen” is no longer in memory."]
    assert memory_md(workspace) == "## Remembered\n- Ann lives in Oslo\n"  # back, and current
    assert statuses(workspace) == {"Ann lives in Oslo": "active"}
    assert "Ann lives in Oslo" in prompt and "Bergen" not in prompt


async def test_undo_of_a_superseding_tag_makes_the_old_fact_current_again(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=ON)
    fake_openai.script(
        Reply("Noted.<memory>Ann lives in Oslo</memory>"),
        Reply("Noted.<memory>Ann moved to Bergen</memory>"),
    )
    async with started_app(settings) as app:
        await said(app, "my sister is in Oslo")
        moved = await said(app, "she moved to Bergen yesterday")
        assert "- Ann lives in Oslo _(was, until " in memory_md(workspace)
        assert statuses(workspace)["Ann lives in Oslo"] == "superseded"
        done = await undo_last(app, moved)
        prompt = await next_prompt_at(app, fake_openai)

    assert done == ["Undone: “Ann moved to Bergen” is no longer in memory."]
    assert memory_md(workspace) == "## Remembered\n- Ann lives in Oslo\n"  # no mark left
    assert statuses(workspace)["Ann lives in Oslo"] == "active"
    assert statuses(workspace)["Ann moved to Bergen"] == "forgotten"
    assert "Ann lives in Oslo" in prompt and "Bergen" not in prompt


async def test_undo_of_a_fact_superseded_since_leaves_the_newer_one_alone_current(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=ON)
    async with started_app(settings) as app:
        await said(app, "/remember Ann lives in Oslo")
        bergen = await said(app, "/remember Ann lives in Bergen")
        await said(app, "/remember Ann lives in Paris")
        await undo_last(app, bergen)

    day = app.now().date().isoformat()
    assert memory_md(workspace) == (
        f"## Remembered\n- Ann lives in Oslo _(was, until {day})_\n- Ann lives in Paris\n"
    )


async def test_undo_of_a_superseding_memory_edit_and_of_remember_puts_back_the_old_fact(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=ON)
    args = {"old": "Rex is a puppy", "new": "Rex is a grown dog", "supersedes": True}
    fake_openai.script(ToolCalls([("memory_edit", args)]), Reply("Updated."))
    async with started_app(settings) as app:
        await said(app, "/remember Rex is a puppy")
        grown = await said(app, "Rex grew up")
        await undo_last(app, grown)
        after_edit = memory_md(workspace)
        await said(app, "/remember Tom works at Acme")
        moved = await said(app, "/remember Tom works at Globex")  # supersedes by the rule
        assert "- Tom works at Acme _(was, until " in memory_md(workspace)
        await undo_last(app, moved)

    assert after_edit == "## Remembered\n- Rex is a puppy\n"
    assert memory_md(workspace) == "## Remembered\n- Rex is a puppy\n- Tom works at Acme\n"
    assert statuses(workspace)["Rex is a puppy"] == "active"
    assert statuses(workspace)["Tom works at Acme"] == "active"


async def test_undo_after_an_edit_by_receipt_puts_the_first_text_back(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=None, openai=fake_openai, memory=ON)
    async with started_app(settings) as app:
        first = await said(app, "/remember The gate code is 1234")
        await said(app, first.receipts[0].buttons[1].command)  # Edit
        changed = await said(app, "The gate code is 9876")
        await undo_last(app, changed)

    assert memory_md(workspace) == "## Remembered\n- The gate code is 1234\n"
    assert statuses(workspace) == {"The gate code is 1234": "active"}
    assert "9876" not in (workspace / "state" / "receipts.json").read_text()


async def next_prompt_at(app: App, openai: FakeOpenAI) -> str:
    """The memory the model gets on the next turn (at the console)."""
    openai.script(Reply("ok"))
    await said(app, "what do you know?")
    return system_text(openai.requests[-1])
