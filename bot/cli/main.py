"""`python -m bot …` (or `mnemo …`): the command line's grammar — every command, its arguments,
and what `--help` says of each, in the words of the person typing it — and `main`, which parses
and hands the chosen command to `bot.cli.launch`.

Nothing of the bot is imported here, so `--help` and a mistyped command cost argparse alone:
each command names the function that runs it (`runs`, "module:function" under `bot.cli`), and
that module is imported only once the command is chosen.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

PROG = "python -m bot"
DESCRIPTION = (
    "Mnemo, a Telegram assistant that remembers. Run these in the folder you cloned, with the "
    "Python that has the bot's packages: .venv/bin/python -m bot COMMAND (make setup, make run, "
    "make chat and make doctor run the first four for you). Under Docker: docker compose exec "
    "mnemo python -m bot COMMAND."
)
EPILOG = "Each command's --help says more, e.g. .venv/bin/python -m bot memory search --help."
Arguments = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    name: str
    runs: str  # "module:function" under bot.cli: function(settings, args, out) -> exit status
    summary: str  # its line in the list of commands
    description: str  # what its own --help says
    arguments: Arguments | None = None


def _chat(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the log here, not in its file"
    )


def _eval(parser: argparse.ArgumentParser) -> None:
    kinds = parser.add_subparsers(dest="eval_command", required=True, metavar="KIND")
    retrieval = kinds.add_parser(
        "retrieval",
        help="how much of the evidence for each question the bot's recall finds",
        description="How much of the evidence each question needs the bot's recall shows, "
        "measured as the bot ships (its settings), on datasets of conversations and questions; "
        "the format and figures are in benchmarks/README.md.",
    )
    retrieval.add_argument("datasets", type=Path, nargs="+", metavar="DATASET.json")
    retrieval.add_argument(
        "--k", type=_positive, nargs="+", default=[5, 10, 20], help="recall@k for each (5 10 20)"
    )
    retrieval.add_argument(
        "--baseline",
        choices=["keyword", "bm25"],
        nargs="+",
        default=[],
        help="also measure these: keyword (the search without the embedder), bm25",
    )
    retrieval.add_argument(
        "--embedder",
        choices=["none", "model2vec", "openai"],
        help="default: the BOT_RAG__EMBEDDER setting (openai only when asked here)",
    )
    retrieval.add_argument(
        "--model2vec-path", type=Path, help="a model2vec model's folder (BOT_RAG__MODEL2VEC_PATH)"
    )
    retrieval.add_argument(
        "--window",
        type=_positive,
        default=131_072,
        help="the model's window in tokens: the section a turn gets at it (131072)",
    )
    retrieval.add_argument("--table", action="store_true", help="text tables instead of JSON")


def _memory(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="memory_command", required=True, metavar="ACTION")
    search = commands.add_parser(
        "search",
        help="what memory says about something, best first",
        description="Search what the bot remembers, as it searches for an answer: where each "
        "hit is, what kind of memory, which day, and the lines that match. Your own memory "
        "unless --chat names another chat.",
    )
    search.add_argument("query", help='what to look for, e.g. "where is the spare key"')
    search.add_argument("--k", type=int, default=None, help="how many hits to show")
    search.add_argument("--chat", default=None, help="a chat, e.g. telegram:-100123: only its")
    commands.add_parser("reindex", help="rebuild the search from the memory files")
    commands.add_parser("stats", help="what the search and the memory hold")
    export = commands.add_parser("export", help="write this bot's memory to a folder or a file")
    export.add_argument("target", metavar="DIR|FILE", help="a new folder, or a new FILE.tar.gz")
    imported = commands.add_parser(
        "import", help="read memory an export wrote into this bot (stop the bot first)"
    )
    imported.add_argument("source", metavar="DIR|FILE")
    imported.add_argument(
        "--force", action="store_true", help="move a memory that is not empty aside first"
    )
    edit = commands.add_parser(
        "edit", help="edit a memory file in your $EDITOR (kept safe if the bot changes it too)"
    )
    edit.add_argument("file", metavar="FILE", help="its path in memory/, like MEMORY.md")


def _pair(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="pair_command", required=True, metavar="ACTION")
    commands.add_parser("list", help="the claim code, the requests waiting, who is let in")
    approve = commands.add_parser("approve", help="let in the person whose request has CODE")
    approve.add_argument("code", metavar="CODE", help="the code they were given, e.g. QX4M-2KTP")
    unpair = commands.add_parser("unpair", help="shut someone you let in out again")
    unpair.add_argument("user_id", metavar="ID", help="their Telegram id (pair list shows it)")


def _prompt(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chat", help="the chat, e.g. telegram:123 (left out: list the chats)")
    parser.add_argument(
        "--message", default="", help="the next message (what it recalls depends on it)"
    )
    parser.add_argument("--full", action="store_true", help="print the whole prompt too")


def _reminders(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="reminders_command", required=True, metavar="ACTION")
    commands.add_parser("list", help="every chat's reminders and tasks with their next time")


def _web(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="web_command", required=True, metavar="ACTION")
    link = commands.add_parser("link", help="print a one-time link that signs you in")
    link.add_argument("--user", type=int, help="whose page (default: the first owner)")


def _usage(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chat", metavar="KEY", help="one chat's only, e.g. telegram:42")


COMMANDS = (
    Command(
        "setup",
        "setup:command",
        "ask for the bot token, the model and your time zone; save them in .env",
        "Asks for the bot token, the model and your time zone, checks each, and saves them in "
        ".env (only you can read it). Run it again at any time: Enter keeps a value as it is. "
        "Ctrl-C stops it and leaves .env as it was.",
    ),
    Command(
        "run",
        "serving:telegram",
        "start the bot: it answers in Telegram until you stop it",
        "Starts the bot: it answers in Telegram until you stop it with Ctrl-C. It tries the "
        "model once as it starts and says what is wrong, if anything. What it had not finished "
        "is answered at the next start.",
    ),
    Command(
        "chat",
        "serving:console",
        "talk to the bot in this terminal",
        "Talk to your bot in this terminal, with the same memory as your private chat in "
        "Telegram. /stop or Ctrl-C stops an answer; Ctrl-C or Ctrl-D at the prompt ends the "
        "chat. /file PATH sends a file.",
        _chat,
    ),
    Command(
        "doctor",
        "doctor:command",
        "check everything the bot needs, one line each",
        "Checks everything the bot needs (the workspace, Telegram, owners, the model, voice "
        "notes, photos, search), one line each: ok, warn or FAIL, with what to do. Exits 1 when "
        "something failed.",
    ),
    Command(
        "health",
        "health:command",
        "is the running bot connected to Telegram? (Docker's health check)",
        "Says whether the running bot polls Telegram (from the heartbeat it leaves after each "
        "poll; no network call). Exits 1 when not. Docker's health check runs it.",
    ),
    Command(
        "pair",
        "pairs:run",
        "who may talk to the bot: the claim code, requests, people let in",
        "Who may talk to the bot, as /pair and /unpair do in your chat: the claim code while "
        "the bot has no owner, the requests waiting, the people let in. Runs beside the bot.",
        _pair,
    ),
    Command(
        "memory",
        "memory.commands:run",
        "search memory, rebuild its search, move or edit it",
        "What the bot remembers, from a shell: search it, rebuild its search from the files, "
        "export it to move to another computer and import it there, or edit one of its files.",
        _memory,
    ),
    Command(
        "reminders",
        "reminders:run",
        "every chat's reminders and scheduled tasks",
        "Every chat's reminders and scheduled tasks, with their next time.",
        _reminders,
    ),
    Command(
        "usage",
        "spending:run",
        "what the model cost today and this month",
        "The tokens and model calls of today and this month, by kind of work and by chat, with "
        "the cost in dollars for the models config/prices.json lists. Runs beside the bot.",
        _usage,
    ),
    Command(
        "web",
        "web:run",
        "the memory page in your browser: a one-time sign-in link",
        "Prints a one-time link that signs you in to the memory page the bot serves (when "
        "BOT_WEB__ENABLED=true), as /web gives one in your private chat.",
        _web,
    ),
    Command(
        "prompt",
        "prompt:command",
        "what the bot would send the model for a chat's next message",
        "Shows what the bot would send the model for a chat's next message, part by part with "
        "its tokens, without calling the model.",
        _prompt,
    ),
    Command(
        "eval",
        "evaluate:run",
        "measure how much of what it was told the bot finds again",
        "Measures the bot offline: eval retrieval tells how much of what it was told its "
        "recall finds again.",
        _eval,
    ),
)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        each = sub.add_parser(command.name, help=command.summary, description=command.description)
        each.set_defaults(runs=command.runs)
        if command.arguments is not None:
            command.arguments(each)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    from bot.cli import launch  # the bot itself only once a command is chosen (see above)

    return launch.run(args)


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value
