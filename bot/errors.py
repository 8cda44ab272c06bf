"""The exception tree, named by intent (no imports from `bot`).

    MnemoError
    ├── ConfigError            settings missing or invalid; one line for the user
    │   └── DatasetError       an evaluation dataset is malformed; names the bad field
    ├── StartupError           the bot cannot start or go on (token rejected, Telegram or the
    │                          model unreachable): one line that says what to fix, no secret
    ├── StorageError           a workspace file could not be read or written
    ├── StoreAway              the replicas' shared database is unreachable (a restart): the
    │                          turn that met it is tried again once it is back, not answered
    │   └── NotTextError       a memory file the bot may not change (not text, or not UTF-8
    │       │                  for a rewrite): left exactly as it is; the message says why,
    │       │                  for the user
    │       └── OutOfScopeError  one that leads out of its scope's folder
    │                          (`bot.storage.confined`), left alone the same way
    ├── LLMError               the model could not answer; `cause` says why (`LLMCause`), and
    │   │                      `bot.llm.failures` words it for the user
    │   ├── LLMUnavailable     network, timeout, 5xx, rate limit after retries
    │   ├── LLMRejected        the provider refused the request (4xx)
    │   └── ContextOverflow    the prompt is longer than the model's window
    ├── RagUnavailable         the LightRAG server did not answer (network, timeout, 5xx,
    │                          refused key); recall goes on from the embedded index
    ├── ModelFetchError        the embedding model could not be fetched on first use (no
    │                          network, no such model): recall is keyword-only until it can
    ├── TranscriptionFailed    a voice note could not be transcribed; the message says why in
    │                          a few words for the user (never the key or the provider's text)
    ├── ToolError              a tool failed; its text goes back to the model
    ├── SendFailed             a channel could not send a reply: retried later unless permanent
    └── PipelineError          the pipeline is wired wrong (duplicate orders)

`StopTurn` (in `bot.pipeline`) is control flow, not an error.
"""

from enum import StrEnum


class MnemoError(Exception):
    """Base of every error the bot raises on purpose."""


class ConfigError(MnemoError):
    pass


class DatasetError(ConfigError):
    pass


class StartupError(MnemoError):
    pass


class TokenRejected(StartupError):
    """Telegram refused the bot token (revoked, or never valid): no restart fixes it."""


class StorageError(MnemoError):
    pass


class NotTextError(StorageError):
    pass


class OutOfScopeError(NotTextError):
    pass


class StoreAway(MnemoError):
    pass


class LLMCause(StrEnum):
    """Why the model failed, as `bot.llm.openai_chat` reads the provider's answer."""

    KEY_REJECTED = "key rejected"  # 401
    OUT_OF_CREDIT = "out of credit"  # 402, or 429 insufficient_quota
    MODEL_NOT_FOUND = "model not found"  # 404 that names the model, model_not_found
    NO_ENDPOINT = "no chat endpoint"  # another 404: the base URL is wrong
    RATE_LIMITED = "rate limited"  # 429
    TIMED_OUT = "timed out"
    OVERLOADED = "overloaded"  # 5xx, 529
    UNREACHABLE = "unreachable"  # connection refused, DNS, TLS
    REFUSED = "request refused"  # another 4xx
    OVERFLOW = "context overflow"
    CAPPED = "daily cap reached"  # ours, not the provider's (`bot.usage`): the message says which
    FAILED = "failed"  # anything else (no choices, an answer we cannot read)


class LLMError(MnemoError):
    """`str()` is one line for logs and `doctor`; the fields are what `bot.llm.failures` needs
    to tell a person: never the key, and the provider's words (`detail`) already scrubbed."""

    def __init__(
        self,
        message: str,
        *,
        cause: LLMCause = LLMCause.FAILED,
        model: str = "",
        host: str = "",
        status: int | None = None,
        detail: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.cause = cause
        self.model = model
        self.host = host
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


class LLMUnavailable(LLMError):
    pass


class LLMRejected(LLMError):
    pass


class ContextOverflow(LLMRejected):
    def __init__(self, message: str, *, limit: int | None = None, model: str = "") -> None:
        super().__init__(message, cause=LLMCause.OVERFLOW, model=model)
        self.limit = limit  # the window the provider stated, when it did


class ModelFetchError(MnemoError):
    pass


class RagUnavailable(MnemoError):
    pass


class TranscriptionFailed(MnemoError):
    pass


class ToolError(MnemoError):
    pass


class SendFailed(MnemoError):
    """A reply (part) did not go out. `permanent`: it never will (the user blocked the bot, the
    chat is gone); otherwise try again, after `retry_after` seconds when the channel said so."""

    def __init__(self, reason: str, *, permanent: bool, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.permanent = permanent
        self.retry_after = retry_after


class PipelineError(MnemoError):
    pass
