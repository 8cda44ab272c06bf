"""What the README and the pages in docs/ promise is true: every setting they name is a setting
of `bot.settings.Settings`, every `python -m bot …` command they show parses (its flags
included), every `make` target they name exists, and every link between them leads to a file
and a heading that are there. The README stays a read of minutes: at most ~400 lines, no module
path and no internal name in the sections a user reads."""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from bot import settings as settings_module
from bot.cli.main import make_parser
from bot.settings import Settings
from tests.harness import REPO

README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, *DOCS, REPO / "benchmarks" / "README.md"]
# A `BOT_*` name a page may show that is read from the environment before the settings are.
NOT_SETTINGS = {settings_module.CONFIG_FILE_VAR}
FILE_NAME = r"\.(jsonl?|py|md|toml|txt|ya?ml)$"  # `memory.py`, `reminders.jsonl`: no settings


def text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def fields(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every setting as a dotted path (`telegram.token`), sections and their fields."""
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        yield path
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield from fields(kind, f"{path}.")


SETTINGS = set(fields(Settings))
SECTIONS = {path for path in SETTINGS if "." not in path}


def as_path(variable: str) -> str:
    """`BOT_TELEGRAM__OWNER_IDS` → `telegram.owner_ids`."""
    return variable.removeprefix("BOT_").lower().replace("__", ".")


@pytest.mark.parametrize("page", [README, *DOCS, REPO / ".env.example"], ids=lambda p: p.name)
def test_every_setting_a_page_names_exists(page: Path) -> None:
    named = set(re.findall(r"\bBOT_[A-Z0-9_]*[A-Z0-9*]", text(page))) - NOT_SETTINGS
    assert named or page != README
    for variable in sorted(named):
        path = as_path(variable)
        if path.endswith("*"):  # `BOT_MEDIA__TRANSCRIPTION_*`: some settings start so
            assert any(s.startswith(path[:-1]) for s in SETTINGS), variable
        else:
            assert path in SETTINGS, f"{page.name}: {variable} is no setting"
    for dotted in re.findall(r"`([a-z_]+\.[a-z_.]+)(?: = [^`]*)?`", text(page)):
        if dotted.split(".")[0] in SECTIONS and not re.search(FILE_NAME, dotted):
            assert dotted in SETTINGS, f"{page.name}: {dotted} is no setting"


def fenced(page: str) -> tuple[list[str], list[str]]:
    """A page's lines in fenced code blocks, and the others."""
    code: list[str] = []
    prose: list[str] = []
    inside = False
    for line in page.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
        else:
            (code if inside else prose).append(line)
    return code, prose


def shown_commands(page: str) -> Iterator[tuple[str, bool]]:
    """The arguments of each `python -m bot …` a page shows, and whether it is shown whole (in a
    code block, or alone in inline code) rather than named in a sentence."""
    code, prose = fenced(page)
    lines = [line.split(" # ")[0] for line in code]
    spans = re.findall(r"`([^`\n]+)`", "\n".join(prose))
    for line, whole in [(line, True) for line in lines] + [(span, False) for span in spans]:
        for found in re.finditer(r"python -m bot ((?:[^#|`\\]|\|(?=[^ ]))+)", line):
            command = found.group(1).strip()
            if "…" not in command:
                yield command, whole


def variants(command: str) -> list[str]:
    """The command with its optional `[parts]` given, and without them."""
    return [re.sub(r"\[([^\]]*)\]", r"\1", command), re.sub(r"\s*\[[^\]]*\]", "", command)]


def test_the_pages_show_commands() -> None:
    found = {c for page in PAGES for c, _ in shown_commands(text(page))}
    assert {
        "pair list",
        "doctor",
        'memory search "where is the spare key" [--k 8] [--chat telegram:-100123]',
    } <= found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_command_a_page_shows_parses(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command, whole in shown_commands(text(page)):
        for argv in variants(command):
            try:
                make_parser().parse_args(shlex.split(argv))
            except SystemExit as exc:
                why = capsys.readouterr().err
                named = not whole and "the following arguments are required" in why
                assert exc.code == 0 or named, f"{page.name}: `python -m bot {argv}`: {why}"


def test_every_make_target_the_pages_name_exists(tmp_path: Path) -> None:
    named = {t for page in PAGES for t in re.findall(r"`make ([a-z][\w-]*)", text(page))}
    assert {"setup", "run", "chat", "doctor", "test"} <= named
    for target in sorted(named):
        done = subprocess.run(
            ["make", "-n", target, f"VENV={tmp_path / 'venv'}"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"make {target}: {done.stderr.strip()}"


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    _, prose = fenced(text(page))
    return {anchor(line.lstrip("#")) for line in prose if re.match(r"#+ ", line)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_link_between_the_pages_leads_somewhere(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", text(page)):
        if re.match(r"[a-z]+://", target):
            continue
        file, _, heading = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        assert linked.exists(), f"{page.name}: {target} leads to no file"
        if heading and linked.suffix == ".md":
            assert heading in anchors(linked), f"{page.name}: {target} leads to no heading"


def user_sections() -> str:
    """The README but its table of where to go (which names the pages for the rest)."""
    return text(README).split("## You want to", 1)[0]


def test_the_readme_is_short_and_in_a_users_words() -> None:
    assert len(text(README).splitlines()) <= 400
    said = user_sections()
    assert not re.findall(r"\bbot/\w+", said), "a module path"
    assert not re.findall(r"\bbenchmarks/", said), "a benchmark in the user sections"
    internal = ("pipeline", "consolidation", "journal", "ledger", "MemoryWriter", "system 20")
    for word in internal:
        assert word.lower() not in said.lower(), word
    assert not re.findall(r"`[a-z]+_[a-z_]+`", said), "a name from the code"
    assert not re.findall(r"\b[A-Z][a-z]+(?:Writer|Store|Service|Channel|Context)\b", said)


def test_the_readme_links_every_page_of_the_docs() -> None:
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)", text(README)))
    assert {f"docs/{page.name}" for page in DOCS} <= linked
    assert "benchmarks/README.md" in text(README)


def test_the_first_screen_takes_a_new_user_to_a_first_answer() -> None:
    first_screen = "\n".join(text(README).splitlines()[:66])
    for step in ("make setup", "make run", "/claim", "write to it"):
        assert step in first_screen, step
