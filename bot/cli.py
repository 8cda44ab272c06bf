"""Command line: `python -m bot run | chat | doctor | memory … | eval retrieval`. Thin: parse,
load settings, hand over."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

from bot import logs, memory_cli
from bot.app import build_app
from bot.channels.console import ConsoleChannel
from bot.channels.telegram import TelegramChannel, check_token
from bot.errors import ConfigError, StartupError
from bot.eval.dataset import load_dataset
from bot.eval.retrieval import evaluate
from bot.index import Embedder, Model2VecEmbedder
from bot.llm.tokens import TokenCounter
from bot.models import ChatMessage
from bot.settings import Settings, load_settings, require_secret

TOKEN_VAR = "BOT_TELEGRAM__TOKEN"
API_KEY_VAR = "BOT_LLM__API_KEY"
log = structlog.get_logger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run the Telegram bot (long polling)")
    sub.add_parser("chat", help="talk to the bot in this terminal")
    sub.add_parser("doctor", help="check settings, workspace, Telegram and the model")
    _add_eval_parser(sub)
    memory_cli.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        if args.command == "eval":
            return eval_retrieval(settings, args)
        if args.command == "memory":
            _configure_logs(settings)
            return memory_cli.run(settings, args)
        return asyncio.run(_COMMANDS[args.command](settings))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


async def run_telegram(settings: Settings) -> int:
    token = require_secret(settings.telegram.token, TOKEN_VAR)
    api_key = require_secret(settings.llm.api_key, API_KEY_VAR)
    _configure_logs(settings)
    app = build_app(settings, api_key=api_key)
    channel = TelegramChannel(
        app.runner,
        token=token,
        base_url=settings.telegram.base_url,
        poll_timeout=settings.telegram.poll_timeout,
        typing_interval=settings.telegram.typing_interval,
        state_path=app.workspace.channel_state_path("telegram"),
        shutdown_grace=settings.telegram.shutdown_grace,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await app.start()
        await channel.run(stop)
    finally:
        await app.aclose()
    return 0


async def run_console(settings: Settings) -> int:
    api_key = require_secret(settings.llm.api_key, API_KEY_VAR)
    _configure_logs(settings)
    app = build_app(settings, api_key=api_key)
    try:
        await app.start()
        await ConsoleChannel(app.runner, now=app.now, stdin=sys.stdin, stdout=sys.stdout).run()
    finally:
        await app.aclose()
    return 0


async def doctor(settings: Settings) -> int:
    """Check each part and say what is wrong, one line each."""
    _configure_logs(settings)
    problems = 0
    for name, check in (("telegram", _check_telegram), ("model", _check_model)):
        try:
            print(f"ok    {name}: {await check(settings)}")
        except Exception as exc:
            problems += 1
            print(f"FAIL  {name}: {type(exc).__name__}: {_redact(settings, str(exc))[:200]}")
    return 1 if problems else 0


async def _check_telegram(settings: Settings) -> str:
    token = require_secret(settings.telegram.token, TOKEN_VAR)
    return await asyncio.wait_for(check_token(token, settings.telegram.base_url), timeout=20)


async def _check_model(settings: Settings) -> str:
    api_key = require_secret(settings.llm.api_key, API_KEY_VAR)
    app = build_app(settings, api_key=api_key)
    try:
        reply = await app.llm.complete([ChatMessage(role="user", content="Say OK.")], max_tokens=5)
        return f"{settings.llm.model} answered {reply.content!r}; workspace {app.workspace.root}"
    finally:
        await app.aclose()


def _configure_logs(settings: Settings) -> None:
    """Logs that never show a configured secret, whatever the command (`doctor` included: a
    provider may echo the key back in an error)."""
    logs.configure(fmt=settings.log.format, level=settings.log.level, secrets=_secrets(settings))


def _secrets(settings: Settings) -> list[str]:
    """The bot token and the API keys (the LightRAG key too: sent in a header only)."""
    values = (settings.telegram.token, settings.llm.api_key, settings.rag.lightrag_api_key)
    return [value.get_secret_value() for value in values if value and value.get_secret_value()]


def _redact(settings: Settings, text: str) -> str:
    return logs.scrub(text, _secrets(settings))


def _add_eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    kinds = sub.add_parser("eval", help="measure the bot offline").add_subparsers(required=True)
    retrieval = kinds.add_parser(
        "retrieval", help="recall of the memory index on a dataset (README: Retrieval evaluation)"
    )
    retrieval.add_argument("dataset", type=Path, metavar="DATASET.json")
    retrieval.add_argument(
        "--k", type=_positive, nargs="+", default=[5, 10, 20], help="recall@k for each (5 10 20)"
    )
    retrieval.add_argument(
        "--budget-tokens", type=_positive, default=1024, help="recall@budget's budget (1024)"
    )
    retrieval.add_argument("--baseline", choices=["bm25"], help="also run this baseline")
    retrieval.add_argument(
        "--embedder", choices=["none", "model2vec"], help="default: the rag.embedder setting"
    )
    retrieval.add_argument("--model2vec-path", type=Path, help="default: rag.model2vec_path")


def eval_retrieval(settings: Settings, args: argparse.Namespace) -> int:
    """Print the retrieval evaluation's JSON report (`bot.eval`)."""
    dataset = load_dataset(args.dataset)
    _configure_logs(settings)
    report = evaluate(
        dataset,
        ks=sorted(set(args.k)),
        budget_tokens=args.budget_tokens,
        embedder=_eval_embedder(settings, args.embedder, args.model2vec_path),
        baseline=args.baseline == "bm25",
        count=TokenCounter().count,
    )
    print(json.dumps({"dataset": str(args.dataset), **report}, indent=2))
    return 0


def _eval_embedder(settings: Settings, choice: str | None, folder: Path | None) -> Embedder | None:
    choice = choice or settings.rag.embedder
    if choice == "none":
        return None
    if choice != "model2vec":
        raise ConfigError("the retrieval eval runs offline: pass --embedder none or model2vec")
    folder = folder or settings.rag.model2vec_path
    if folder is None:
        raise ConfigError("--embedder model2vec needs --model2vec-path (or rag.model2vec_path)")
    return Model2VecEmbedder(folder)


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


_COMMANDS = {"run": run_telegram, "chat": run_console, "doctor": doctor}
