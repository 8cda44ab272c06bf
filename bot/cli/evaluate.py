"""`python -m bot eval retrieval DATASET.json…`: the retrieval evaluation (`bot.eval`) from the
command line. Each dataset is one slice of the report: JSON by default (one dataset: its
report; several: `{"slices": [each report]}`), or with `--table` the text tables of
`bot.eval.table`, one per dataset. The bot is measured as it ships: its `# Relevant Memory`
section of `rag.relevant_k` hits within the tokens a turn gives it at the model's window
(`--window`, 128k by default: `bot.memory.recall.prompt.relevant_budget` of the room
`bot.llm.meter.memory_room` leaves beside the tools the bot offers; at most
`rag.relevant_budget_tokens`), with the `rag.embedder` setting (or `--embedder`, to compare);
change them as settings, for the bot and the eval alike. An `openai` embedder (an OpenAI-
compatible `/v1/embeddings`, `rag.embedding_*`: a local server, for one) is used only when
`--embedder openai` asks for it: the datasets' text is sent to it, which a setting alone must
not do."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from bot.errors import ConfigError
from bot.eval.dataset import load_dataset
from bot.eval.retrieval import evaluate
from bot.eval.table import table
from bot.index import Embedder, Model2VecEmbedder
from bot.llm.embeddings import embedder_loader
from bot.llm.meter import memory_room, tool_tokens
from bot.llm.tokens import TokenCounter
from bot.memory.recall.prompt import relevant_budget
from bot.settings import Settings
from bot.storage.workspace import Workspace
from bot.tools.offered import OFFERED

Print = Callable[[str], None]


def run(settings: Settings, args: argparse.Namespace, out: Print = print) -> int:
    """Print the report of every dataset (each loaded first: a bad one stops before any run)."""
    datasets = [(path, load_dataset(path)) for path in args.datasets]
    embedder = _embedder(settings, args.embedder, args.model2vec_path)
    reports = [
        {
            "dataset": str(path),
            **evaluate(
                dataset,
                ks=sorted(set(args.k)),
                hits=settings.rag.relevant_k,
                budget_tokens=window_budget(settings, args.window),
                embedder=embedder,
                baselines=args.baseline,
                count=TokenCounter().count,
                fusion=settings.rag.fusion,
            ),
        }
        for path, dataset in datasets
    ]
    if args.table:
        out("\n\n".join(table(report) for report in reports))
    elif len(reports) == 1:
        out(json.dumps(reports[0], indent=2))
    else:
        out(json.dumps({"slices": reports}, indent=2))
    return 0


def window_budget(settings: Settings, window: int) -> int:
    """The `# Relevant Memory` tokens of a turn at `window`, as `MemoryPrompt.sections` gives
    them when `# Memory` and the pack are full (its share of the room)."""
    tools = tool_tokens(TokenCounter(), [tool.spec for tool in OFFERED])
    room = memory_room(window, tools=tools, output=settings.llm.max_output_tokens)
    return relevant_budget(room, most=settings.rag.relevant_budget_tokens)


def _embedder(settings: Settings, asked: str | None, folder: Path | None) -> Embedder | None:
    choice = asked or settings.rag.embedder
    if choice == "none":
        return None
    if choice == "openai":
        if asked != "openai":
            raise ConfigError(
                "rag.embedder is openai: pass --embedder openai to send the datasets' text to "
                "its endpoint, or --embedder none or model2vec"
            )
        return _endpoint(settings)
    folder = folder or settings.rag.model2vec_path
    if folder is None:
        raise ConfigError("--embedder model2vec needs --model2vec-path (or rag.model2vec_path)")
    return Model2VecEmbedder(folder)


def _endpoint(settings: Settings) -> Embedder | None:
    """The `openai` embedder as the bot loads it (`rag.embedding_*`, else the model's URL and
    key)."""
    key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
    rag = settings.rag.model_copy(update={"embedder": "openai"})
    models = Workspace(settings.workspace).models_dir  # not read: no model to fetch
    load = embedder_loader(rag, llm_base_url=settings.llm.base_url, api_key=key, models_dir=models)
    return load(settings.llm.timeout)
