"""The memory a person keeps in replicated mode (`python -m bot memory export | import | edit`
over the documents the replicas share): moved between the modes byte for byte, and edited
with a version check; `python -m bot reminders list` and the chats' scopes read from them too.
Against a real PostgreSQL (`MNEMO_TEST_PG`; skipped without it)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.app.store import stored_workspace
from bot.cli import reminders
from bot.cli.main import make_parser
from bot.cli.memory import commands as memory
from bot.models import MemoryScope
from bot.reminders.store import ReminderStore
from bot.settings import Settings
from bot.storage.files import FileLocks
from tests.pg import pg_database
from tests.reminding import a_reminder
from tests.talk import GROUP_DIR, write

EDITOR = """\
import os, sys
from pathlib import Path
draft = Path(sys.argv[1])
meanwhile = os.environ.get("FAKE_EDIT_MEANWHILE")
if meanwhile:  # the bot writes the document while the person edits it
    import psycopg
    with psycopg.connect(os.environ["FAKE_EDIT_DB"]) as conn:
        conn.execute(
            "UPDATE mnemo_documents SET body = body || %s, "
            "version = nextval('mnemo_document_versions') WHERE path = %s",
            (meanwhile.encode(), "memory/MEMORY.md"),
        )
draft.write_bytes(draft.read_bytes() + os.environ["FAKE_EDIT_ADD"].encode())
sys.exit(int(os.environ.get("FAKE_EDIT_EXIT", "0")))
"""


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with pg_database() as made:
        yield made


def settings(root: Path, url: str | None) -> Settings:
    store = {"url": url} if url else {}
    return Settings(_env_file=None, workspace=root, store=store)  # type: ignore[call-arg, arg-type]


def cli(root: Path, url: str | None, *args: str) -> tuple[int, str]:
    parser = make_parser()
    printed: list[str] = []
    namespace = parser.parse_args(["memory", *args])
    code = memory.run(settings(root, url), namespace, out=printed.append)
    return code, "\n".join(printed)


def files(root: Path) -> dict[str, bytes]:
    base = root / "memory"
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def shared(root: Path, url: str) -> dict[str, bytes]:
    with stored_workspace(settings(root, url)) as workspace:
        base, documents = workspace.memory_root, workspace.documents
        return {
            p.relative_to(base).as_posix(): documents.read(p) or b"" for p in documents.walk(base)
        }


def embedded(root: Path) -> Path:
    write(root, "MEMORY.md", "# Facts\r\n- The boat is moored at pier seven.\r\n")
    write(root, "2026-11-20.md", "[09:15] User: buy oat milk | Assistant: Noted.\n")
    write(root, f"{GROUP_DIR}/MEMORY.md", "- The group keeps its boat at pier nine.\n")
    (root / "memory" / "2026-11-21.md").write_bytes(b"caf\xe9 in Latin-1\n")
    write(root, "items/semantic.jsonl", '{"id": "s-1", "text": "Ann drinks tea."}\n')
    write(root, f"{GROUP_DIR}/items/episodic/2026-11-20.jsonl", '{"id": "e20261120-1"}\n')
    write(root, f"{GROUP_DIR}/reminders.jsonl", '{"version": 1, "id": "r1a2b3c"}\n')
    write(root, "files/2026-11-20-091500-document-7-plan.txt.md", "# plan.txt\nthe plan\n")
    write(root, "files/2026-11-20-091500-document-7-plan.txt", "the plan\n")
    write(root, "working/telegram%3A42.md", "planning the trip\n")
    return root


async def test_a_memory_moves_from_files_to_the_replicas_and_back_byte_for_byte(
    url: str, tmp_path: Path
) -> None:
    source = embedded(tmp_path / "embedded")
    assert cli(source, None, "export", str(tmp_path / "out"))[0] == 0
    replica = tmp_path / "replica"
    code, said = cli(replica, url, "import", str(tmp_path / "out"))
    assert code == 0, said
    assert shared(replica, url) == files(source)
    # all in the database, not on disk: a file a message came with too (any replica reads it)
    assert files(replica) == {}
    code, found = cli(replica, url, "search", "boat moored pier")  # this replica's index
    assert code == 0 and "MEMORY.md#L1-L2" in found
    assert cli(replica, url, "export", str(tmp_path / "back"))[0] == 0
    again = tmp_path / "again"
    assert cli(again, None, "import", str(tmp_path / "back"))[0] == 0
    assert files(again) == files(source)


async def test_an_import_over_a_shared_memory_needs_force_and_keeps_the_old_one(
    url: str, tmp_path: Path
) -> None:
    source = embedded(tmp_path / "embedded")
    cli(source, None, "export", str(tmp_path / "out"))
    replica = tmp_path / "replica"
    with stored_workspace(settings(replica, url)) as workspace:
        workspace.documents.write(workspace.memory_root / "MEMORY.md", b"- older\n")
    code, said = cli(replica, url, "import", str(tmp_path / "out"))
    assert code == 1 and "--force" in said
    assert shared(replica, url) == {"MEMORY.md": b"- older\n"}
    code, said = cli(replica, url, "import", str(tmp_path / "out"), "--force")
    assert code == 0 and "memory.before-import-" in said
    assert shared(replica, url) == files(source)
    with stored_workspace(settings(replica, url)) as workspace:
        kept = [p for p in workspace.documents.walk(replica) if p.name == "MEMORY.md"]
        older = [workspace.documents.read(p) for p in kept if "before-import" in str(p)]
    assert older == [b"- older\n"]


def taken(draft: str) -> bytes:
    """The edited text a refused edit kept in `draft` (removed)."""
    path = Path(draft)
    data = path.read_bytes()
    path.unlink()
    return data


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "editor.py"
    script.write_text(EDITOR)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    return script


async def test_edit_writes_the_person_s_text_back(
    url: str, tmp_path: Path, editor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replica = tmp_path / "replica"
    with stored_workspace(settings(replica, url)) as workspace:
        workspace.documents.write(workspace.memory_root / "MEMORY.md", b"- Likes tea\r\n")
    monkeypatch.setenv("FAKE_EDIT_ADD", "- Has a cat\r\n")
    code, said = cli(replica, url, "edit", "MEMORY.md")
    assert code == 0 and "saved" in said
    assert shared(replica, url) == {"MEMORY.md": b"- Likes tea\r\n- Has a cat\r\n"}
    monkeypatch.setenv("FAKE_EDIT_ADD", "- Ann's group\n")
    assert cli(replica, url, "edit", f"{GROUP_DIR}/MEMORY.md")[0] == 0
    assert shared(replica, url)[f"{GROUP_DIR}/MEMORY.md"] == b"- Ann's group\n"


async def test_an_edit_over_a_change_made_meanwhile_is_refused_and_kept(
    url: str, tmp_path: Path, editor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replica = tmp_path / "replica"
    with stored_workspace(settings(replica, url)) as workspace:
        workspace.documents.write(workspace.memory_root / "MEMORY.md", b"- Likes tea\n")
    monkeypatch.setenv("FAKE_EDIT_DB", url)
    monkeypatch.setenv("FAKE_EDIT_MEANWHILE", "- Lives in Oslo\n")
    monkeypatch.setenv("FAKE_EDIT_ADD", "- Has a cat\n")
    code, said = cli(replica, url, "edit", "MEMORY.md")
    assert code == 1 and "was changed while you edited it" in said
    assert shared(replica, url) == {"MEMORY.md": b"- Likes tea\n- Lives in Oslo\n"}
    assert taken(said.split("kept in ")[1].split(":")[0]) == b"- Likes tea\n- Has a cat\n"


async def test_an_edit_the_editor_gives_up_or_outside_memory_writes_nothing(
    url: str, tmp_path: Path, editor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replica = tmp_path / "replica"
    monkeypatch.setenv("FAKE_EDIT_ADD", "- half typed\n")
    monkeypatch.setenv("FAKE_EDIT_EXIT", "1")
    code, said = cli(replica, url, "edit", "MEMORY.md")
    assert code == 1 and "exited with 1" in said
    assert taken(said.split("is in ")[1].rstrip(")")) == b"- half typed\n"
    code, said = cli(replica, url, "edit", "../sessions/telegram_1.json")
    assert code == 1 and "not a path under memory/" in said
    assert shared(replica, url) == {}


async def test_reminders_list_and_the_chats_are_what_the_replicas_share(
    url: str, tmp_path: Path
) -> None:
    group = MemoryScope(chat_key="telegram:-100555")
    made = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    item = a_reminder(made, chat_id=-100555, when="2030-01-01 09:00")
    with stored_workspace(settings(tmp_path / "a", url)) as workspace:
        await ReminderStore(workspace, FileLocks(workspace.locks_dir)).add(group, item)
    printed: list[str] = []
    args = argparse.Namespace(reminders_command="list")
    other = settings(tmp_path / "b", url)  # another replica's folder: empty
    assert await asyncio.to_thread(reminders.run, other, args, printed.append) == 0
    [line] = printed
    assert line.startswith("telegram:-100555  [r1] Tue 2030-01-01 09:00 (UTC)")
    assert line.endswith("(memory/chats/telegram%3A-100555/reminders.jsonl)")
    with stored_workspace(other) as workspace:
        assert workspace.chat_scopes() == [group]


def test_the_replicas_share_the_documents_whose_stores_read_them_through_the_workspace(
    tmp_path: Path,
) -> None:
    from bot.replicas.shared_documents import SplitDocuments
    from bot.storage.files import ON_DISK

    split = SplitDocuments(ON_DISK, ON_DISK, tmp_path)
    shared = [
        "sessions/telegram_42.json",
        "sessions/archive/telegram_42-20261127T093000000000.json",
        "memory/MEMORY.md",
        "memory/MEMORY.provenance.jsonl",
        "memory/QUOTED.md",
        "memory/2026-11-27.md",
        "memory/archive/2026-10-01.md",
        "memory/HISTORY.md",
        "memory/working/telegram%3A42.md",
        f"memory/{GROUP_DIR}/HISTORY-2026-11.md",
        f"memory/{GROUP_DIR}/MEMORY.md",
        "memory/items/semantic.jsonl",
        "memory/items/episodic",  # a folder: its listing is the shared side's
        f"memory/{GROUP_DIR}/items/episodic/2026-11-27.jsonl",
        "memory/reminders.jsonl",
        f"memory/{GROUP_DIR}/reminders.jsonl",
        "memory/files/2026-11-27.md",
        "memory/files/2026-11-27-093000-photo-7.jpg",  # what a person sent: any replica reads it
        f"memory/{GROUP_DIR}/files/MEMORY.md",
        "state/chatter/telegram%3A-100123.json",
        "state/undo/x/manifest.json",
        "state/undo/x/0.orig",
        "state/consolidation/20261127T093000000000-abc.json",
        "state/usage.json",
        "state/receipts.json",
        "state/timezones.json",
        "state/task_tokens.json",
    ]
    local = [
        "memory/files/old/2026-11-27.md",
        "memory/working/reminders.jsonl",
        f"memory/{GROUP_DIR}/files/items/x.jsonl",
        "memory.before-import-20261127/MEMORY.md",
        "state/inbox/1.json",
        "state/paired.json",
        "state/telegram.json",
        "state/undo",
        "state/usage.json.lock",
    ]
    assert [p for p in shared if not split.is_shared(tmp_path / p)] == []
    assert [p for p in local if split.is_shared(tmp_path / p)] == []
