"""A real small model on this CPU, through the whole bot: tell a fact, /new, ask for it back.

    make real-model-check MODEL_GGUF=/path/to/model.gguf       (opt-in; never in CI)
    .venv/bin/python scripts/real_model_check.py MODEL.gguf [--ctx 8192] [--threads 2]

It starts llama.cpp's own OpenAI-compatible server from the `xllamacpp` wheel (prebuilt for
CPUs, nothing compiled; `make real-model-check` installs it into .venv) in a child process on
127.0.0.1, runs the bot against it with the shipped defaults (timeouts included) in a fresh
workspace, prints each reply and how long it took, then what the workspace holds: MEMORY.md,
HISTORY.md, today's note and the structured items that mention the fact. Exit 0 when the fact
came back after /new, 1 when it did not.

A model that fits a small CPU: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0, 1.1 GB), from
Hugging Face: Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF, qwen2.5-coder-1.5b-instruct-q4_k_m.gguf.
Any small instruct GGUF will do. On 2 cores it reads ~30 prompt tokens/s and writes ~6/s: the
whole check takes a few minutes, most of it the first prompt and the consolidation at /new.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.app import build_app
from bot.logs import configure
from bot.models import Inbound
from bot.settings import LLMSettings, RagSettings, Settings, TelegramSettings

OWNER = 1
FACT = "4721"
CONVERSATION = (
    f"Please remember this for later: the code of my bicycle lock is {FACT}.",
    "/new",
    "What is the code of my bicycle lock?",
)
MODEL_ALIAS = "local"
READY_SECONDS = 300.0


# ----------------------------------------------------------------------------- the server


def serve(model: str, port: int, ctx: int, threads: int) -> None:
    """In the child: llama.cpp's server on 127.0.0.1:`port` until killed."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = ctx
    params.n_parallel = 1
    params.use_jinja = True
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.sampling.temp = 0
    params.sampling.seed = 42
    params.model_alias = {MODEL_ALIAS}
    server = xllamacpp.Server(params)  # serves from a thread while the object lives
    while server is not None:
        time.sleep(3600)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def model_server(model: Path, *, ctx: int, threads: int, log: Path) -> Iterator[str]:
    """The server in a child process; its base URL once /health says it is ready."""
    port = free_port()
    env = os.environ | {"OMP_WAIT_POLICY": "PASSIVE"}  # spinning threads starve the other core
    command = [sys.executable, __file__, "--serve", str(model), str(port), str(ctx), str(threads)]
    with log.open("wb") as out:
        child = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_ready(f"http://127.0.0.1:{port}/health", child, log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        child.terminate()
        try:
            child.wait(20)
        except subprocess.TimeoutExpired:
            child.kill()


def wait_ready(url: str, child: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit(f"error: the model server stopped (see {log})")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as answer:
            if answer.status == 200:
                return
        time.sleep(1)
    raise SystemExit(f"error: the model server was not ready in {READY_SECONDS:g} s (see {log})")


# ----------------------------------------------------------------------------- the bot


class Capture:
    """A chat that keeps what the bot sends."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def parts(self, text: str) -> Sequence[object]:
        return [text]

    async def send_part(self, part: object) -> None:
        self.texts.append(str(part))

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        yield

    async def acknowledge(self) -> None:
        pass


def settings_for(workspace: Path, base_url: str, ctx: int) -> Settings:
    """The shipped defaults (timeouts included), but for the model and where it is."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=workspace,
        telegram=TelegramSettings(owner_ids=(OWNER,)),
        llm=LLMSettings(
            base_url=base_url,
            api_key=SecretStr("none"),
            model=MODEL_ALIAS,
            context_window=ctx,
        ),
        rag=RagSettings(embedder="none"),
    )


async def converse(settings: Settings) -> list[str]:
    """Each message through the bot's runner, as a channel sends it; the replies."""
    app = build_app(settings, api_key="none")
    await app.start()
    replies = []
    try:
        for number, text in enumerate(CONVERSATION, 1):
            chat = Capture()
            inbound = Inbound(
                id=f"check:{number}",
                channel="check",
                chat_id=OWNER,
                user_id=OWNER,
                text=text,
                received_at=datetime.now(UTC),
            )
            print(f"\n> {text}", flush=True)
            begun = time.monotonic()
            await app.router.handle(inbound, chat)
            reply = "\n".join(chat.texts)
            print(f"< {reply}\n  ({time.monotonic() - begun:.0f} s)", flush=True)
            replies.append(reply)
    finally:
        await app.aclose()
    return replies


def show_stored(workspace: Path) -> None:
    memory = workspace / "memory"
    print("\n== what was stored ==")
    for name in ("MEMORY.md", "HISTORY.md", f"{datetime.now(UTC).date()}.md"):
        path = memory / name
        text = path.read_text(errors="replace").strip() if path.exists() else "(none)"
        print(f"--- memory/{name}\n{text[-1500:]}")
    items = [
        json.loads(line)
        for path in sorted((memory / "items").rglob("*.jsonl"))
        for line in path.read_text(errors="replace").splitlines()
        if FACT in line
    ]
    print(f"--- structured items that mention {FACT}: {len(items)}")
    for item in items[:5]:
        print(f"  [{item.get('layer', '?')}] {str(item.get('text', item))[:160]}")


def check(model: Path, *, ctx: int, threads: int) -> int:
    os.chdir(Path(__file__).resolve().parents[1])  # config/ as the bot reads it
    root = Path(tempfile.mkdtemp(prefix="mnemo-real-model-"))
    workspace, log = root / "workspace", root / "server.log"
    print(f"model {model}\nworkspace {workspace}\nserver log {log}", flush=True)
    configure(fmt="console", level="WARNING")
    begun = time.monotonic()
    with model_server(model, ctx=ctx, threads=threads, log=log) as base_url:
        print(f"server ready in {time.monotonic() - begun:.0f} s at {base_url}", flush=True)
        replies = asyncio.run(converse(settings_for(workspace, base_url, ctx)))
    show_stored(workspace)
    came_back = FACT in replies[-1]
    verdict = "came back" if came_back else "did NOT come back"
    print(f"\n== the fact ({FACT}) {verdict} after /new; {time.monotonic() - begun:.0f} s in all")
    return 0 if came_back else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["--serve"]:
        model, port, ctx, threads = args[1:5]
        serve(model, int(port), int(ctx), int(threads))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a GGUF file (see this script's docstring)")
    parser.add_argument("--ctx", type=int, default=8192, help="the server's context (8192)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (2)")
    options = parser.parse_args(args)
    options.model = options.model.resolve()
    if not options.model.is_file():
        where = __doc__.split("\n\n")[3]
        print(f"error: no GGUF file at {options.model}.\n{where}")
        return 2
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        print("error: xllamacpp is not installed: .venv/bin/python -m pip install xllamacpp")
        return 2
    return check(options.model, ctx=options.ctx, threads=options.threads)


if __name__ == "__main__":
    sys.exit(main())
