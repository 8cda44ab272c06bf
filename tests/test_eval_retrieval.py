"""`python -m bot eval retrieval`: the shipped evalset end to end, hits → turns, the metrics."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.evalsets.synthetic import generate
from bot.cli import main
from bot.eval.corpus import SourceText, Span, build_corpus, pairs
from bot.eval.dataset import Conversation, Dataset, Question, Session, Turn
from bot.eval.report import Answer, Retrieved, Section, answer_words, score
from bot.eval.retrieval import run_mnemo
from bot.index import Hit
from bot.index.snippets import GAP, snippet
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import FakeOpenAI
from tests.harness import REPO, SMALL_MODEL2VEC

EVALSET = REPO / "tests" / "data" / "evalset.json"
MODEL = SMALL_MODEL2VEC
RECALLS = ("recall@5", "recall@10", "recall@budget")


def run_eval(
    tmp_path: Path,
    *args: str,
    budget: int | None = None,
    hits: int | None = None,
    settings: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
        **(settings or {}),
    }
    if budget is not None:  # a setting, as the bot reads it: the eval has no knob of its own
        env["BOT_RAG__RELEVANT_BUDGET_TOKENS"] = str(budget)
    if hits is not None:
        env["BOT_RAG__RELEVANT_K"] = str(hits)
    command = [sys.executable, "-m", "bot", "eval", "retrieval", *args]
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )


def check_figures(figures: dict[str, Any]) -> None:
    assert figures["questions"] > 0
    for name in RECALLS:
        assert 0.0 <= figures[name] <= 1.0, name


# ----------------------------------------------------------------------------- the command


def test_on_the_shipped_evalset_mnemo_beats_bm25_on_recall_within_the_budget(
    tmp_path: Path,
) -> None:
    done = run_eval(
        tmp_path,
        *(str(EVALSET), "--k", "5", "10", "--baseline", "bm25"),
        *("--embedder", "model2vec", "--model2vec-path", str(MODEL)),
        budget=512,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["questions"] == 50 and report["conversations"] == 5
    assert report["k"] == [5, 10] and report["budget_tokens"] == 512
    assert report["hits"] == 100  # rag.relevant_k, as config/settings.toml ships it
    assert report["embedder"].startswith("model2vec:")
    for system in ("mnemo", "bm25"):
        figures = report[system]
        check_figures(figures["overall"])
        assert len(figures["per_category"]) >= 3
        for category in figures["per_category"].values():
            check_figures(category)
        assert figures["index_build_s"] >= 0
        assert 0 <= figures["query_ms"]["p50"] <= figures["query_ms"]["p95"]
    assert report["mnemo"]["indexed"].keys() == {"exchange", "note"}
    assert report["mnemo"]["overall"]["recall@budget"] > report["bm25"]["overall"]["recall@budget"]


async def test_an_embeddings_endpoint_is_measured_only_when_the_command_asks_for_it(
    tmp_path: Path,
) -> None:
    async with FakeOpenAI() as endpoint:
        settings = {
            "BOT_RAG__EMBEDDER": "openai",
            "BOT_RAG__EMBEDDING_BASE_URL": endpoint.base_url,
            "BOT_RAG__EMBEDDING_API_KEY": "a-local-server",
        }
        refused = await asyncio.to_thread(run_eval, tmp_path, str(EVALSET), settings=settings)
        assert endpoint.embedding_requests == [], "the setting alone sends nothing"
        asked = ("--embedder", "openai", "--baseline", "keyword")
        done = await asyncio.to_thread(run_eval, tmp_path, str(EVALSET), *asked, settings=settings)
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: rag.embedder is openai: pass --embedder openai")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["embedder"] == "openai:text-embedding-3-small"
    assert len(endpoint.embedding_requests) > report["questions"]  # the chunks, then each question
    for system in ("mnemo", "keyword"):
        check_figures(report[system]["overall"])


def test_a_bad_dataset_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOT_WORKSPACE", str(tmp_path / "ws"))  # its log, not the repository's
    dataset = tmp_path / "bad.json"
    dataset.write_text(json.dumps({"conversations": [], "questions": []}))
    assert main(["eval", "retrieval", str(dataset)]) == 2
    assert capsys.readouterr().err == (
        "error: conversations: expected a non-empty list, got an empty list\n"
    )


# ----------------------------------------------------------------------------- hits → turns


def turn(turn_id: str, speaker: str, text: str) -> Turn:
    return Turn(turn_id, "user" if speaker == "user" else "assistant", text)


def test_turns_pair_into_exchanges_as_the_bot_sees_them() -> None:
    turns = [
        turn("a", "assistant", "Hello, I'm your assistant."),
        turn("b", "user", "Remind me about the dentist."),
        turn("c", "assistant", "Will do."),
        turn("d", "user", "Also the car."),
        turn("e", "user", "And the cat."),
        turn("f", "assistant", "Noted both."),
    ]
    found = [tuple(t.id if t else None for t in pair) for pair in pairs(turns)]
    assert found == [(None, "a"), ("b", "c"), ("d", None), ("e", "f")]


def test_each_exchange_is_indexed_twice_and_maps_back_to_its_turns(tmp_path: Path) -> None:
    session = Session(
        "s1",
        date(2026, 3, 2),
        (turn("t1", "user", "Book the vet for Pixel."), turn("t2", "assistant", "Booked.")),
    )
    dataset = Dataset(
        (Conversation("home", (session,)),), (Question("home", "vet?", ("t1",), "single-hop"),)
    )
    corpus = build_corpus(dataset, Workspace(tmp_path))
    [exchange] = corpus.exchanges
    assert (exchange.scope, exchange.session_key) == ("eval:home", "eval:home")
    assert exchange.at == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    note = "[09:00] User: Book the vet for Pixel. | Assistant: Booked.\n"
    assert corpus.notes == {"chats/eval%3Ahome/2026-03-02.md": note}
    hit = Hit(exchange.path, 1, 2, exchange.text, 0.1, "exchange", "eval:home", exchange.at)
    assert corpus.covered(hit) == {"t1", "t2"}


def test_named_speakers_are_indexed_with_their_turns_as_in_a_group(tmp_path: Path) -> None:
    said = (turn("t1", "user", "We got a puppy."), turn("t2", "assistant", "A puppy, lovely!"))
    home = Conversation(
        "home",
        (Session("s1", date(2026, 3, 2), said),),
        (("user", "Daniel"), ("assistant", "Lucas")),
    )
    question = Question("home", "When did Daniel get the puppy?", ("t1",), "temporal")
    corpus = build_corpus(Dataset((home,), (question,)), Workspace(tmp_path))
    [exchange] = corpus.exchanges
    assert exchange.text == "User: Daniel: We got a puppy.\nAssistant: Lucas: A puppy, lovely!"
    note = "[09:00] User: Daniel: We got a puppy. | Assistant: Lucas: A puppy, lovely!\n"
    assert corpus.notes == {"chats/eval%3Ahome/2026-03-02.md": note}
    hit = Hit(exchange.path, 1, 2, exchange.text, 0.1, "exchange", "eval:home", exchange.at)
    assert corpus.covered(hit) == {"t1", "t2"}
    run = run_mnemo(Dataset((home,), (question,)), k=1, budget=1024, count=len, embedder=None)
    [answer] = run.answers
    assert "Daniel: We got a puppy." in answer.hits[0].text


def test_a_turn_counts_only_when_half_of_it_is_in_the_snippet() -> None:
    lines = [f"[09:0{n}] User: {'question ' * 20}| Assistant: {'answer ' * 25}" for n in range(4)]
    text = "\n".join(lines) + "\n"
    spans = []
    for n, line in enumerate(lines):
        offset = sum(len(earlier) + 1 for earlier in lines[:n])
        cut = line.index(" | Assistant: ")
        spans.append(Span(offset + line.index("User: ") + 6, offset + cut, f"u{n}"))
        spans.append(Span(offset + cut + 14, offset + len(line), f"a{n}"))
    source = SourceText(text, tuple(spans))
    said = lines[0].index("User: ") + 6  # where the user's words start on a line
    two_thirds, one_third = lines[2][: said + 120], lines[3][: said + 60]
    shown = "\n".join([lines[0], GAP, two_thirds + GAP, one_third + GAP])
    assert source.covered(1, 4, shown) == {"u0", "a0", "u2"}
    assert source.covered(1, 4, "\n".join(lines)) == {f"{s}{n}" for s in "ua" for n in range(4)}
    assert source.covered(1, 4, "text that is not there") == frozenset()
    picked = snippet(text.rstrip("\n"), ["question"], limit=520)  # the best line, and a gap
    assert picked == f"{lines[0]}\n{GAP}" and source.covered(1, 4, picked) == {"u0", "a0"}


# ----------------------------------------------------------------------------- the metrics


def answer(*hits: tuple[str, set[str]]) -> Answer:
    question = Question("c", "q", ("x", "y"), "single-hop")
    found = tuple(Retrieved(text, frozenset(turns)) for text, turns in hits)
    return Answer(question, found, 0.001)


def test_recall_at_k_is_the_share_of_evidence_in_the_first_k_hits() -> None:
    scored = score(
        answer(("aa", {"x"}), ("bb", {"z"}), ("cc", {"y"})), ks=[1, 2, 3], budget=99, count=len
    )
    assert scored.at_k == (0.5, 0.5, 1.0)


def test_recall_at_budget_passes_over_a_hit_too_big_and_takes_a_smaller_one_after_it() -> None:
    hits = (("a" * 6, {"z"}), ("b" * 6, {"x"}), ("c" * 3, {"y"}))
    scored = score(answer(*hits), ks=[3], budget=10, count=len)
    assert (scored.at_budget, scored.budget_hits, scored.budget_tokens) == (0.5, 2, 9)


def test_answer_coverage_is_the_share_of_the_answers_own_words_the_section_shows() -> None:
    asked = Question("c", "Where did Ann move?", ("x",), "single-hop", answer="Ann moved to Leeds.")
    shown = Section("## 2026-01-05\n- Ann: we are moving to Leeds", (Retrieved("…", frozenset()),))
    assert answer_words(asked) == {"leed"}  # "Ann", "move" are the question's own words
    assert score(Answer(asked, (), 0.0, shown), ks=[1], budget=99, count=len).coverage == 1.0
    elsewhere = Section("- Ann: we moved to York", ())
    assert score(Answer(asked, (), 0.0, elsewhere), ks=[1], budget=99, count=len).coverage == 0.0
    unanswered = replace(asked, answer=None)
    assert score(Answer(unanswered, (), 0.0, shown), ks=[1], budget=99, count=len).coverage is None


def test_several_datasets_are_slices_with_intervals_and_the_keyword_baseline(
    tmp_path: Path,
) -> None:
    months = tmp_path / "months.json"
    months.write_text(json.dumps(generate(seed=5, conversations=1)), encoding="utf-8")
    common = ("--k", "5", "--baseline", "keyword", "--embedder", "model2vec")
    model = ("--model2vec-path", str(MODEL))
    done = run_eval(tmp_path, str(months), str(EVALSET), *common, *model, hits=10)
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout)["slices"]
    assert (first["dataset"], second["dataset"]) == (str(months), str(EVALSET))
    assert second["questions"] == 50
    for report in (first, second):
        for system in ("mnemo", "keyword"):
            overall = report[system]["overall"]
            low, high = overall["ci95"]["recall@budget"]
            assert low <= overall["recall@budget"] <= high
    assert first["keyword"]["indexed"] == first["mnemo"]["indexed"]

    table = run_eval(tmp_path, str(months), str(EVALSET), *common, *model, "--table", hits=10)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith(f"{months}: 1 conversations,")
    assert any(line.startswith(f"{EVALSET}: 5 conversations,") for line in lines)
    overall = second["mnemo"]["overall"]
    row = next(line for line in lines if line.startswith("overall (50) "))
    assert row.split()[3:5] == [f"{overall['recall@5']:.3f}", f"{overall['recall@budget']:.3f}"]
    assert sum(line.startswith("target: mnemo >= keyword") for line in lines) == 2


def test_a_question_is_read_against_the_day_it_is_asked() -> None:
    def session(n: int, day: date) -> Session:
        said = Turn(f"t{n}", "user", f"The vet visit went fine, number {n}.")
        return Session(f"s{n}", day, (said, Turn(f"r{n}", "assistant", "Good.")))

    days = (date(2026, 1, 5), date(2026, 2, 9), date(2026, 3, 2))
    home = Conversation("home", tuple(session(n, day) for n, day in enumerate(days)))

    def first_hit(question: Question) -> float:
        run = run_mnemo(Dataset((home,), (question,)), k=1, budget=9999, count=len, embedder=None)
        return score(run.answers[0], ks=[1], budget=9999, count=len).at_k[0]

    asked = Question("home", "how did the vet go last month?", ("t1",), "temporal")
    assert first_hit(replace(asked, asked=date(2026, 3, 10))) == 1.0  # February's
    assert first_hit(replace(asked, asked=date(2026, 2, 10))) == 0.0  # then January's
