"""What a person is told when the model fails, by cause (`bot.errors.LLMCause`).

Three wordings of one failure, all here:

- `line`: one line for the log and `python -m bot doctor`, with the base URL and the setting.
- `for_owner`: the owner, in their private chat (or at the console): what failed, the model and
  the host, and what to change (the setting by its variable, e.g. `BOT_LLM__API_KEY`).
- `for_others`: anyone else, groups included: a short line — try again later, or the owner
  has a setting to fix. No model, host or provider's words.

Never the key: the provider's own words (`LLMError.detail`) are scrubbed where they are caught
(`bot.llm.openai_chat`), and only the owner sees them.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from bot import shell
from bot.errors import LLMCause, LLMError

API_KEY_VAR = "BOT_LLM__API_KEY"
MODEL_VAR = "BOT_LLM__MODEL"
BASE_URL_VAR = "BOT_LLM__BASE_URL"
TIMEOUT = "BOT_LLM__FIRST_TOKEN_TIMEOUT"  # the wait a slow model outlasts (`bot.llm.stream`)

# causes only the owner can end (a setting, the account); the rest pass by themselves
OWNER_MUST_FIX = frozenset(
    {
        LLMCause.KEY_REJECTED,
        LLMCause.OUT_OF_CREDIT,
        LLMCause.MODEL_NOT_FOUND,
        LLMCause.NO_ENDPOINT,
        LLMCause.UNREACHABLE,
    }
)
TOO_LONG = "This conversation is too long for the model. Use /compact or /new."
REFUSED = "The model refused this request. Try rephrasing, or /new to start over."
OWNER_NEEDED = (
    "The assistant's model is unavailable right now: its owner has a setting to fix. "
    "Please try again later."
)
BUSY = (
    "The assistant's model is busy or not answering right now. Please try again in a few minutes."
)


def host_of(base_url: str) -> str:
    """`api.openai.com`, `127.0.0.1:8080`: where the model is, without a path or credentials."""
    parts = urlsplit(base_url)
    if not parts.hostname:
        return base_url
    return parts.hostname + (f":{parts.port}" if parts.port else "")


def tell(error: LLMError, *, owner: bool) -> str:
    """What the chat hears: the owner's wording or everyone else's."""
    return for_owner(error) if owner else for_others(error)


def for_others(error: LLMError) -> str:
    if error.cause is LLMCause.CAPPED:
        return str(error)  # which cap, and when it starts again (`bot.usage`)
    if error.cause is LLMCause.OVERFLOW:
        return TOO_LONG
    if error.cause is LLMCause.REFUSED:
        return REFUSED
    return OWNER_NEEDED if error.cause in OWNER_MUST_FIX else BUSY


def for_owner(error: LLMError) -> str:
    if error.cause is LLMCause.CAPPED:
        return str(error)
    if error.cause is LLMCause.OVERFLOW:
        return TOO_LONG
    return _FOR_OWNER.get(error.cause, _OWNER_FAILED).format(
        host=error.host or "the provider",
        where=" at ".join(filter(None, (error.model, error.host))) or "the model",
        model=error.model or "the model",
        http=f" (HTTP {error.status})" if error.status else "",
        when=_when(error.retry_after),
        said=f" The provider said: “{error.detail}”." if error.detail else "",
    )


def line(cause: LLMCause, *, base_url: str, status: int | None = None, detail: str = "") -> str:
    """One line for the log and `doctor`: what failed at which URL and what to check."""
    template = _LINES.get(cause, "{at} failed{http}: {detail}")
    http = f" (HTTP {status})" if status else ""
    return template.format(at=f"the model at {base_url}", http=http, detail=detail)


_FOR_OWNER: dict[LLMCause, str] = {
    LLMCause.KEY_REJECTED: (
        "The model provider ({host}) rejected the API key{http}. Put a valid key in "
        f"{API_KEY_VAR} and restart the bot."
    ),
    LLMCause.OUT_OF_CREDIT: (
        "The model provider ({host}) says the account is out of credit or over its quota{http}. "
        "Add credit or raise the limit on the provider's billing page, or use another key in "
        f"{API_KEY_VAR}."
    ),
    LLMCause.MODEL_NOT_FOUND: (
        "{host} has no model “{model}”, or this key may not use it{http}. Check the name in "
        f"{MODEL_VAR} (BOT_LLM__FAST_MODEL for summaries)."
    ),
    LLMCause.NO_ENDPOINT: (
        "{host} has no OpenAI-compatible chat endpoint at that address{http}. Check "
        f"{BASE_URL_VAR}; it usually ends in /v1."
    ),
    LLMCause.RATE_LIMITED: (
        "{host} is rate-limiting requests for {model}{http}. Try again {when}; if it keeps "
        "happening, check your plan's limits."
    ),
    LLMCause.TIMED_OUT: (
        "The model ({where}) did not answer in time. Try again; a slow or local model may need "
        f"a higher {TIMEOUT}."
    ),
    LLMCause.OVERLOADED: (
        "The model ({where}) is overloaded or failing on the provider's side{http}. Try again "
        "in a few minutes."
    ),
    LLMCause.UNREACHABLE: (
        f"Cannot reach the model server at {{host}}. Check that it is running and that "
        f"{BASE_URL_VAR} is right."
    ),
    LLMCause.REFUSED: "The model ({where}) refused this request{http}.{said} " + REFUSED,
}
_OWNER_FAILED = (
    "The model ({where}) gave no usable answer.{said} Try again; if it keeps happening, run "
    + shell.in_template("doctor")
    + " where the bot runs."
)
_LINES: dict[LLMCause, str] = {
    LLMCause.KEY_REJECTED: f"{{at}} rejected the API key{{http}}: check {API_KEY_VAR}",
    LLMCause.OUT_OF_CREDIT: (
        f"{{at}} says the account is out of credit or quota{{http}}: add credit, or check "
        f"{API_KEY_VAR}"
    ),
    LLMCause.MODEL_NOT_FOUND: f"{{at}} has no such model{{http}}: check {MODEL_VAR}: {{detail}}",
    LLMCause.NO_ENDPOINT: (
        f"{{at}} has no chat endpoint{{http}}: check {BASE_URL_VAR} (it usually ends in /v1)"
    ),
    LLMCause.RATE_LIMITED: "{at} is rate-limiting requests{http}: {detail}",
    LLMCause.TIMED_OUT: (
        f"{{at}} did not answer in time: check the network and {BASE_URL_VAR}, or raise {TIMEOUT}"
    ),
    LLMCause.UNREACHABLE: f"cannot reach {{at}}: check the network and {BASE_URL_VAR}",
    LLMCause.REFUSED: "{at} refused the request{http}: {detail}",
}


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "in a minute"
    return f"in {max(1, round(seconds))} s"
