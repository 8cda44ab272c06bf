"""`python -m bot.eval.realtalk`: REALTALK and LoCoMo chats (a made-up fixture in their layouts)
as the eval's dataset."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from bot.errors import DatasetError
from bot.eval.dataset import load_dataset
from bot.eval.realtalk import convert, evidence_ids, main

FIXTURE = Path(__file__).resolve().parent / "data" / "realtalk_fixture"


def test_a_realtalk_chat_becomes_a_conversation_with_named_speakers_and_dated_sessions(
    tmp_path: Path,
) -> None:
    out = tmp_path / "set.json"
    assert main([str(FIXTURE), str(out)]) == 0
    dataset = load_dataset(out)
    chat = dataset.conversations[0]
    assert chat.id == "Chat_1_Ann_ben"
    assert dict(chat.names) == {"user": "Ann", "assistant": "Ben"}  # "ben" capitalised
    assert [s.day for s in chat.sessions] == [date(2023, 12, 29), date(2023, 12, 31)]
    assert [t.speaker for t in chat.sessions[1].turns] == ["assistant", "user"]
    assert chat.sessions[0].turns[2].text == "The one near the river in Leeds."


def test_evidence_is_cleaned_of_stray_dots_and_a_question_without_any_is_left_out() -> None:
    questions = convert(FIXTURE)["questions"]
    assert isinstance(questions, list)
    first = [q for q in questions if q["conversation"] == "Chat_1_Ann_ben"]
    assert [q["evidence"] for q in first] == [["D1:1", "D1:3"], ["D2:1"]]
    assert [q["category"] for q in first] == ["multi-hop", "temporal"]
    assert {q["date"] for q in first} == {"2023-12-31"}  # the chat's last session
    assert evidence_ids(["D1:1.", " D1:2 ", "D17;39", "D1:1"], {"D1:1", "D1:2"}) == ["D1:1", "D1:2"]


def test_a_locomo_chat_reads_its_conversation_and_worded_dates() -> None:
    dataset: Any = convert(FIXTURE)
    chat = dataset["conversations"][1]
    assert chat["speakers"] == {"user": "Cleo", "assistant": "Dan"}
    assert [s["date"] for s in chat["sessions"]] == ["2023-05-08", "2023-05-20"]
    assert chat["sessions"][0]["turns"][1]["text"] == "[photo]"  # no words: a photo alone
    asked = [q for q in dataset["questions"] if q["conversation"] == chat["id"]]
    categories = [q["category"] for q in asked]
    assert categories == ["single-hop", "adversarial"]
    assert [q.get("answer") for q in asked] == ["a greyhound", None]  # kept when it is given


def test_a_folder_without_chats_or_with_a_broken_one_says_so(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no Chat_"):
        convert(tmp_path)
    (tmp_path / "Chat_1_A_B.json").write_text("{not json", encoding="utf-8")
    assert main([str(tmp_path), str(tmp_path / "out.json")]) == 1
    assert not (tmp_path / "out.json").exists()
    (tmp_path / "Chat_1_A_B.json").write_text(json.dumps({"session_1": [], "qa": []}))
    with pytest.raises(DatasetError, match="no sessions"):
        convert(tmp_path)
