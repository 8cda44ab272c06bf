"""`python -m bot prompt --chat KEY [--message TEXT] [--full]`: the prompt the next message in a
chat would get, from a shell (`bot.turn.preview`): its parts and their tokens, then with `--full`
the whole text. Without `--chat`, or with a key the workspace has no conversation for, it lists
the chats it knows.

No model is called and no Telegram token is needed (a model key only when the embedder is
"openai"). The index is opened and synced as the bot opens it, so `# Relevant Memory` is what a
message would find now; what it recalls depends on the message (`--message`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable

from bot import shell
from bot.app import build_app
from bot.llm.inspection import full_text, summary
from bot.settings import Settings

Print = Callable[[str], None]
NO_KEY = "unused"  # the model is never called: a key is needed only to build its client


def command(settings: Settings, args: argparse.Namespace, out: Print) -> int:
    return asyncio.run(run(settings, args, out=out))


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


async def run(
    settings: Settings, args: argparse.Namespace, out: Print = print, err: Print = _stderr
) -> int:
    key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else ""
    app = build_app(settings, api_key=key or NO_KEY)
    try:
        chats = app.preview.chats()
        if args.chat not in chats:
            return _list(chats, args.chat, out if args.chat is None else err)
        if app.items_index is not None:
            await app.items_index.index.start()
        request = await app.preview.next_request(args.chat, args.message)
        fullness = await app.preview.how_full(args.chat)
    finally:
        await app.aclose()
    title = f"The next message in {args.chat} would send (tokens, {settings.llm.model}):"
    out(summary(app.preview.count(request), title=title))
    out(fullness)
    if args.full:
        out("")
        out(full_text(request))
    return 0


def _list(chats: list[str], asked: str | None, out: Print) -> int:
    """The known chats; exit status 1 when a key was asked for and is not one of them."""
    if asked is not None:
        out(f"error: no conversation for the chat {asked!r} in this workspace")
    out("chats: " + (", ".join(chats) if chats else "none yet (no conversation saved)"))
    out("usage: " + shell.command("prompt --chat KEY [--message TEXT] [--full]"))
    return 1 if asked is not None else 0
