"""The exception tree, named by intent (no imports from `bot`).

    MnemoError
    ├── ConfigError            settings missing or invalid; one line for the user
    │   └── DatasetError       an evaluation dataset is malformed; names the bad field
    ├── StartupError           the bot cannot start or go on (token rejected, Telegram or the
    │                          model unreachable): one line that says what to fix, no secret
    ├── StorageError           a workspace file could not be read or written
    │   └── NotTextError       a memory file the bot may not change (not text, or not UTF-8
    │       │                  for a rewrite): left exactly as it is; the message says why,
    │       │                  for the user
    │       └── OutOfScopeError  one that leads out of its scope's folder
    │                          (`bot.storage.confined`), left alone the same way
    ├── LLMError               the model could not answer; the user gets a short notice
    │   ├── LLMUnavailable     network, timeout, 5xx, rate limit after retries
    │   ├── LLMRejected        the provider refused the request (4xx)
    │   └── ContextOverflow    the prompt is longer than the model's window
    ├── RagUnavailable         the LightRAG server did not answer (network, timeout, 5xx,
    │                          refused key); recall goes on from the embedded index
    ├── ToolError              a tool failed; its text goes back to the model
    ├── SendFailed             a channel could not send a reply: retried later unless permanent
    └── PipelineError          the pipeline is wired wrong (duplicate orders)

`StopTurn` (in `bot.pipeline`) is control flow, not an error.
"""


class MnemoError(Exception):
    """Base of every error the bot raises on purpose."""


class ConfigError(MnemoError):
    pass


class DatasetError(ConfigError):
    pass


class StartupError(MnemoError):
    pass


class StorageError(MnemoError):
    pass


class NotTextError(StorageError):
    pass


class OutOfScopeError(NotTextError):
    pass


class LLMError(MnemoError):
    user_message = "The model is not answering right now. Please try again in a moment."


class LLMUnavailable(LLMError):
    pass


class LLMRejected(LLMError):
    user_message = "The model refused this request. Try rephrasing, or /new to start over."


class ContextOverflow(LLMRejected):
    user_message = "This conversation is too long for the model. Use /compact or /new."

    def __init__(self, message: str, *, limit: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit  # the window the provider stated, when it did


class RagUnavailable(MnemoError):
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
