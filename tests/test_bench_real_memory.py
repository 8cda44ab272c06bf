"""benchmarks/real_memory.py without a model: it skips cleanly, and its scorer and junk table
count what they say (the real-model run itself is a benchmark, never a test)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from benchmarks.real_memory import Written, cli, day_of, junk_of, score
from bot.eval.dataset import Question, Session, Turn
from bot.memory.lines import fingerprint


def test_without_data_or_model_it_says_why_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MNEMO_REAL_MODEL", raising=False)
    assert cli(["--data", str(tmp_path / "none.json")]) == 0
    assert "skipped: no REALTALK data" in capsys.readouterr().out

    data = tmp_path / "realtalk.json"
    data.write_text(json.dumps({"conversations": [], "questions": []}))
    assert cli(["--data", str(data), "--gguf", str(tmp_path / "no.gguf")]) == 0
    assert "skipped: no model" in capsys.readouterr().out


def test_a_day_pairs_each_users_words_with_the_reply_and_drops_what_leads_it() -> None:
    turns = (
        Turn("D1:1", "assistant", "Morning!"),
        Turn("D1:2", "user", "Hi"),
        Turn("D1:3", "user", "I ran 5k today"),
        Turn("D1:4", "assistant", "Nice run"),
        Turn("D1:5", "user", "Bye"),
    )
    day = day_of(Session("s1", date(2024, 1, 1), turns))

    assert day.dropped == {"D1:1"}
    assert [(e.said, e.reply, e.turns) for e in day.exchanges] == [
        ("Hi\nI ran 5k today", "Nice run", ("D1:2", "D1:3", "D1:4")),
        ("Bye", "", ("D1:5",)),
    ]


def test_a_model_line_holds_only_the_turns_of_its_day_it_shares_words_with() -> None:
    texts = {"D1:1": "I love skiing in Aspen every winter", "D2:1": "We went skiing in Aspen"}
    days = {"D1:1": 0, "D2:1": 1}
    question = Question("c", "Where does Kate ski?", ("D1:1", "D2:1"), "multi-hop")
    shown = "# Memory\n- User's hobby: skiing in Aspen\n"
    lines = {fingerprint("User's hobby: skiing in Aspen"): 0}  # written by day 0's consolidation

    recall, coverage = score(shown, question, "Kate skis in Aspen", texts, days, lines, {"kate"})

    assert recall == 0.5  # day 0's line holds day 0's turn, not day 1's
    assert coverage == pytest.approx(1 / 3)  # of kate, skis, aspen: aspen is shown

    # without provenance the same line holds a turn only as a turn's text would
    recall, _ = score(shown, question, "", texts, days, {}, {"kate"})
    assert recall == 0.5  # "We went skiing in Aspen": 3 of its 3 content words in the line


def test_the_junk_table_sorts_what_the_model_wrote() -> None:
    day = [("user", "I like running and cycling a lot"), ("assistant", "I sell paintings online")]
    earlier: set[str] = set()

    def kind(text: str) -> str | None:
        return junk_of(Written("MEMORY.md", text, 0), earlier, day, {"emi"}, {"emi", "elise"})

    assert kind("User's hobby: running and cycling") is None
    assert kind("* User's hobby: running and cycling.") == "duplicate"  # another bullet form
    assert kind("## Current Long-term Memory") == "prompt echo"
    assert kind("USER: I like running and cycling a lot") == "prompt echo"
    assert kind("(empty)") == "prompt echo"
    assert kind("fact") == "placeholder"
    assert kind("User sells paintings online") == "wrong person"
    assert kind("Emi's job: astronaut") == "ungrounded"
    assert kind("run " * 20) == "degenerate"
