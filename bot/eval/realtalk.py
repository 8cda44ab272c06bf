"""REALTALK and LoCoMo chats as an evaluation dataset (`bot.eval.dataset`'s format):

    python -m bot.eval.realtalk DATA_DIR OUT.json

DATA_DIR holds `Chat_*.json` files in the LoCoMo layout: `session_N` lists of turns
`{dia_id, speaker, clean_text | text, date_time?}` beside `session_N_date_time`, either at the
top of the file (REALTALK, github danny911kr/REALTALK, `data/`) or under `conversation`
(LoCoMo), and a `qa` list of `{question, answer?, evidence, category}`. Each file is one
conversation (its id the file's name without `.json`), its sessions in number order:

- the first speaker of the first session is `user`, the other `assistant`; both names are kept
  (`speakers`), so each turn is stored as `Name: text` (a name written all in lower case gets
  its first letter capitalised, as people write names);
- a session's date is the day of its `session_N_date_time` (`29.12.2023, 00:51:12` or
  `1:56 pm on 8 May, 2023`), else of its first turn's `date_time`;
- a question's evidence ids are cleaned of stray dots (`D11:13.` is `D11:13`); ids
  that name no turn of the chat are left out, and a question left without evidence is left out
  (REALTALK: 679 of 728 questions stay);
- categories are named: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial;
- a question is asked on the day of the chat's last session.

The data carries no licence: keep it and what this makes out of git (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import cast

from bot.errors import DatasetError
from bot.eval.dataset import parse_dataset
from bot.index.when import MONTHS
from bot.storage.files import atomic_write_text

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_SESSION = re.compile(r"session_(\d+)")
_DOTTED = re.compile(r"(\d{1,2})\.(\d{1,2})\.(\d{4})")  # 29.12.2023
_WORDED = re.compile(r"(\d{1,2}) ([A-Za-z]+),? (\d{4})")  # 8 May, 2023
Raw = Mapping[str, object]


def convert(folder: Path) -> dict[str, object]:
    """The dataset (JSON-ready) of every `Chat_*.json` in `folder`, in name order."""
    files = sorted(folder.glob("Chat_*.json"), key=_chat_order)
    if not files:
        raise DatasetError(f"{folder}: no Chat_*.json files")
    conversations, questions = [], []
    for path in files:
        conversation, asked = _conversation(path.stem, _read(path))
        conversations.append(conversation)
        questions.extend(_questions(path.stem, _read(path), conversation, asked))
    return {
        "about": f"converted by `python -m bot.eval.realtalk` from {len(files)} chats",
        "conversations": conversations,
        "questions": questions,
    }


def _read(path: Path) -> Raw:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read it as JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise DatasetError(f"{path}: expected an object")
    return cast(Raw, raw)


def _chat_order(path: Path) -> tuple[int, str]:
    number = re.match(r"Chat_(\d+)", path.name)
    return (int(number[1]) if number else 0, path.name)


def _conversation(chat: str, raw: Raw) -> tuple[dict[str, object], str]:
    """The conversation, and the day of its last session."""
    body = cast(Raw, raw.get("conversation", raw))
    sessions = sorted(
        ((int(m[1]), value) for key, value in body.items() if (m := _SESSION.fullmatch(key))),
        key=lambda found: found[0],
    )
    turns = [cast(Sequence[Raw], value) for _, value in sessions if value]
    if not turns:
        raise DatasetError(f"{chat}: no sessions")
    first = str(turns[0][0]["speaker"])
    speakers = {"user": first, "assistant": first}
    for turn in (t for session in turns for t in session):
        if str(turn["speaker"]) != first:
            speakers["assistant"] = str(turn["speaker"])
            break
    made = []
    for (number, _), session in zip((s for s in sessions if s[1]), turns, strict=True):
        day = _session_day(body, number, session, chat)
        made.append({"id": f"session_{number}", "date": day, "turns": _turns(session, first)})
    names = {role: _name(speaker) for role, speaker in speakers.items()}
    last = max(str(session["date"]) for session in made)
    return {"id": chat, "speakers": names, "sessions": made}, last


def _turns(session: Sequence[Raw], user: str) -> list[dict[str, str]]:
    return [
        {
            "id": str(turn["dia_id"]),
            "speaker": "user" if str(turn["speaker"]) == user else "assistant",
            "text": _text(turn),
        }
        for turn in session
    ]


def _text(turn: Raw) -> str:
    text = str(turn.get("clean_text") or turn.get("text") or "").strip()
    return " ".join(text.split()) or "[photo]"


def _name(speaker: str) -> str:
    return speaker[:1].upper() + speaker[1:] if speaker.islower() else speaker


def _session_day(body: Raw, number: int, session: Sequence[Raw], chat: str) -> str:
    stamp = body.get(f"session_{number}_date_time") or session[0].get("date_time")
    day = _day(str(stamp or ""))
    if day is None:
        raise DatasetError(f"{chat}.session_{number}_date_time: no date in {stamp!r}")
    return day.isoformat()


def _day(stamp: str) -> date | None:
    """The day of `29.12.2023, 00:51:12` or `1:56 pm on 8 May, 2023`; None when neither."""
    if dotted := _DOTTED.search(stamp):
        day, month, year = (int(part) for part in dotted.groups())
        return date(year, month, day)
    if worded := _WORDED.search(stamp):
        month = next((n for n, name in enumerate(MONTHS, 1) if name == worded[2].lower()), 0)
        try:
            return date(int(worded[3]), month, int(worded[1]))
        except ValueError:  # not a month's name, or no such day
            return None
    return None


def _questions(
    chat: str, raw: Raw, conversation: Mapping[str, object], asked: str
) -> list[dict[str, object]]:
    sessions = cast(Sequence[Mapping[str, Sequence[Mapping[str, str]]]], conversation["sessions"])
    known = {turn["id"] for session in sessions for turn in session["turns"]}
    made: list[dict[str, object]] = []
    for item in cast(Sequence[Raw], raw.get("qa", [])):
        evidence = evidence_ids(cast(Sequence[object], item.get("evidence") or []), known)
        question = str(item.get("question") or "").strip()
        category = CATEGORIES.get(cast(int, item.get("category")), str(item.get("category")))
        answer = str(item.get("answer") or "").strip()
        if evidence and question:
            made.append(
                {
                    "conversation": chat,
                    "question": question,
                    "evidence": evidence,
                    "category": category,
                    "date": asked,
                    **({"answer": answer} if answer else {}),
                }
            )
    return made


def evidence_ids(evidence: Sequence[object], known: set[str]) -> list[str]:
    """Each id without stray dots around it (`D11:13.` is `D11:13`), kept when it names a turn
    of `known`, once; anything else (`D17;39`, a range) is left out, as the set's own
    figures count it."""
    cleaned = (str(raw).strip().strip(".") for raw in evidence)
    return list(dict.fromkeys(turn for turn in cleaned if turn in known))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.eval.realtalk", description=__doc__)
    parser.add_argument("data", type=Path, metavar="DATA_DIR", help="holds Chat_*.json")
    parser.add_argument("out", type=Path, metavar="OUT.json")
    args = parser.parse_args(argv)
    try:
        dataset = convert(args.data)
        parse_dataset(dataset)  # what the eval will read: checked before it is written
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    atomic_write_text(args.out, json.dumps(dataset, indent=1, ensure_ascii=False) + "\n")
    chats = cast(list[object], dataset["conversations"])
    asked = cast(list[object], dataset["questions"])
    print(f"{args.out}: {len(chats)} conversations, {len(asked)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
