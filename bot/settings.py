"""Settings: `config/settings.toml` defaults < `.env` < `BOT_*` environment variables.

Read once at start-up, frozen, and passed on as plain values (never the whole object).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from bot.errors import ConfigError
from bot.settings_errors import describe

CONFIG_FILE_VAR = "BOT_CONFIG_FILE"
CONFIG = Path(__file__).resolve().parents[1] / "config"  # the checkout's, wherever it starts
DEFAULT_CONFIG_FILE = CONFIG / "settings.toml"


def _id_list(value: Any) -> Any:
    """User ids as a person writes them: `123456789`, `1, 2`, `1 2` or JSON `[1, 2]`."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a list of numbers: {exc.msg}") from None
    return text.replace(",", " ").split()


UserIds = Annotated[tuple[int, ...], NoDecode, BeforeValidator(_id_list)]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _proxy(value: str | None) -> str | None:
    """A proxy URL: `http://`, `https://`, `socks5://`, `socks5h://` (user:password@ too)."""
    if value is None or not value.strip():
        return None
    url = urlsplit(value.strip())
    if url.scheme not in PROXY_SCHEMES or not url.hostname:
        raise ValueError(
            "not a proxy URL: it is http://, https://, socks5:// or socks5h:// then host:port, "
            "e.g. socks5://127.0.0.1:1080"
        )
    return value.strip()


PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")
Proxy = Annotated[str | None, AfterValidator(_proxy)]


class TelegramSettings(_Section):
    token: SecretStr | None = None
    base_url: str = "https://api.telegram.org/bot"
    proxy: Proxy = None  # every Bot API request through it (bot.channels.telegram)
    owner_ids: UserIds = ()
    allowed_user_ids: UserIds = ()
    pairing: bool = True  # strangers get a code an owner approves with /pair (bot.turn.door)
    poll_timeout: int = Field(default=30, ge=0)
    typing_interval: float = Field(default=4.0, gt=0)
    shutdown_grace: float = Field(default=8.0, ge=0)  # seconds running turns get on SIGTERM
    stream: bool = True  # show a reply while it is written (bot.channels.telegram.drafts)
    stream_interval: float = Field(default=1.0, gt=0)  # seconds between two showings
    reaction: str = "👀"  # set on a message when work on it starts; "" for none
    debounce: float = Field(default=0.5, ge=0, le=10)  # s: follow-ups answered together
    group_chatter_messages: int = Field(default=20, ge=0)  # group talk kept for the next turn
    group_chatter_chars: int = Field(default=3000, ge=1)  # all of them together
    # "polling" (one process) or "webhook" (replicated: any replica takes an update)
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = None  # the public HTTPS address Telegram posts to (a balancer)
    webhook_host: str = "0.0.0.0"  # where this replica's webhook server listens
    webhook_port: int = Field(default=8080, ge=1, le=65535)
    webhook_secret: SecretStr | None = None  # Telegram sends it back in a header; checked
    webhook_max_connections: int = Field(default=40, ge=1, le=100)  # Telegram's, per bot


class LLMSettings(_Section):
    base_url: str = "https://api.openai.com/v1"
    api_key: SecretStr | None = None
    proxy: Proxy = None  # the model's and the transcription service's requests through it
    model: str = "gpt-4o-mini"
    fast_model: str | None = None  # summaries and consolidation; the main model when unset
    # seconds (answers are streamed, bot.llm.stream): to the first piece of an answer (the
    # model reading the prompt), then of silence between pieces
    first_token_timeout: float = Field(default=300.0, gt=0)
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    max_tool_steps: int = Field(default=8, ge=1)
    temperature: float | None = None
    max_output_tokens: int | None = Field(default=None, gt=0)
    context_window: int | None = Field(default=None, gt=0)  # tokens; else models.json, learnt
    # where each message's recalled memory and the time go: a system message before it, or
    # (for chat templates that refuse a system message after the first) the message's opening
    context_role: Literal["system", "user"] = "system"


class ItemSettings(_Section):
    """Structured memory items and the memory pack."""

    promotion_enabled: bool = True
    promotion_min_confidence: float = Field(default=0.75, ge=0, le=1)
    decay_enabled: bool = True
    decay_days: int = Field(default=30, ge=1)  # unused this long: salience is halved
    code_aware_extraction: bool = True  # commands, errors and their fixes become procedures
    episodic_days: int = Field(default=30, ge=1)  # episodic items a pack may draw on
    working_top_k: int = Field(default=6, ge=0)
    episodic_top_k: int = Field(default=8, ge=0)
    semantic_top_k: int = Field(default=6, ge=0)
    procedural_top_k: int = Field(default=4, ge=0)
    soft_budget_tokens: int = Field(default=1800, gt=0)
    max_budget_tokens: int = Field(default=3500, gt=0)  # only high-scoring items go past soft

    @model_validator(mode="after")
    def _max_not_below_soft(self) -> ItemSettings:
        if self.max_budget_tokens < self.soft_budget_tokens:
            raise ValueError(
                "BOT_MEMORY__ITEMS__MAX_BUDGET_TOKENS must not be below "
                "BOT_MEMORY__ITEMS__SOFT_BUDGET_TOKENS"
            )
        return self


class MemorySettings(_Section):
    recent_days: int = Field(default=7, ge=0)
    note_user_chars: int = Field(default=200, gt=0)
    note_assistant_chars: int = Field(default=300, gt=0)
    prompt_budget_tokens: int = Field(default=3500, gt=0)  # the whole `# Memory` section
    # Consolidation
    memory_window: int = Field(default=50, ge=0)  # 0 disables consolidation
    keep_messages: int = Field(default=10, ge=2, le=10)  # seed 001: 2 to 10
    max_memory_size: int = Field(default=8192, gt=0)  # bytes of MEMORY.md before compression
    consolidation_timeout: float = Field(default=900.0, gt=0)  # all told; see docs/settings.md
    raw_fallback_messages: int = Field(default=10, gt=0)
    raw_fallback_chars: int = Field(default=200, gt=0)
    # Tags and working memory
    working_memory_stale_days: int = Field(default=7, ge=0)
    retention_days: int = Field(default=30, ge=1)  # older daily notes move to the archive
    undo_minutes: int = Field(default=10, ge=0)  # how long /forget can be undone
    receipts: bool = True  # a receipt with Undo/Edit/Forget buttons for each fact stored
    items: ItemSettings = ItemSettings()


class CompactionSettings(_Section):
    """Seeds 000 and 004: keep the prompt under the model's window."""

    enabled: bool = True
    threshold: float = Field(default=0.8, gt=0, le=1)  # share of the window that triggers it
    keep_last_messages: int = Field(default=20, ge=2)
    summary_max_tokens: int = Field(default=500, gt=0)
    summary_timeout: float = Field(default=600.0, gt=0)  # the summary (and flush), all told
    summary_temperature: float = Field(default=0.3, ge=0)
    message_chars: int = Field(default=300, gt=0)  # each message cut to this for the summary
    # Pre-compaction memory flush
    flush_enabled: bool = True
    reserve_tokens_floor: int = Field(default=20000, ge=0)
    soft_threshold_tokens: int = Field(default=4000, ge=0)
    models_file: Path = CONFIG / "models.json"  # context windows per model


class RagSettings(_Section):
    """Recall over everything remembered: the embedded index or LightRAG."""

    enabled: bool = True
    backend: Literal["sqlite", "lightrag"] = "sqlite"
    embedder: Literal["none", "model2vec", "openai"] = "none"  # keyword-only when "none"
    model2vec_path: Path | None = None  # a local model2vec folder; else the hub's model …
    model2vec_model: str = "minishlab/potion-retrieval-32M"  # … fetched once into workspace/models/
    model2vec_hub: str = "https://huggingface.co"
    embedding_base_url: str | None = None  # OpenAI-compatible /v1/embeddings; BOT_LLM__* if unset
    embedding_api_key: SecretStr | None = None
    embedding_model: str = "text-embedding-3-small"
    embedding_query_model: str | None = None  # the model name a search's question is sent under
    embedding_query_prefix: str = ""  # before a question ("query: " for e5)
    embedding_passage_prefix: str = ""  # before each indexed text ("passage: " for e5)
    search_k: int = Field(default=8, gt=0, le=50)  # memory_search default
    relevant_k: int = Field(default=100, ge=0, le=200)  # hits under "# Relevant Memory", at most
    relevant_budget_tokens: int = Field(default=4096, ge=0)  # at a large window (smaller: less)
    min_similarity: float = Field(default=0.0, ge=0, le=1)
    fusion: Literal["keyword", "ranks"] = "keyword"  # keyword first, or all by rank (RRF)
    lightrag_url: str = "http://lightrag:9621"
    lightrag_api_key: SecretStr | None = None
    lightrag_mode: Literal["local", "global", "hybrid", "naive", "mix"] = "hybrid"
    lightrag_timeout: float = Field(default=30.0, gt=0)


class MediaSettings(_Section):
    """What comes with a message (`bot.media`): voice notes, photos, files."""

    max_file_mb: float = Field(default=20.0, gt=0)  # refused before download (Telegram: 20 MB)
    # voice notes and audio: an OpenAI-compatible /v1/audio/transcriptions; "" turns it off
    transcription_model: str = "whisper-1"
    transcription_base_url: str | None = None  # BOT_LLM__BASE_URL when unset
    transcription_api_key: SecretStr | None = None  # BOT_LLM__API_KEY when unset
    transcription_timeout: float = Field(default=120.0, gt=0)
    vision: bool | None = None  # whether the model reads images; unset: config/models.json
    # a document's text in the turn at most (and a quarter of the model's window); the whole
    # text is kept and searchable
    document_chars: int = Field(default=20_000, ge=500)


class FreshnessSettings(_Section):
    daily_reset_hour: int | None = Field(default=None, ge=0, le=23)  # local hour, e.g. 4
    idle_minutes: int | None = Field(default=None, gt=0)


class SessionPolicySettings(FreshnessSettings):
    """Seed 004: freshness (off by default), per kind of chat; reset triggers; recovery."""

    chats: dict[Literal["private", "group", "topic"], FreshnessSettings] = {}  # overrides
    reset_triggers: tuple[str, ...] = ()  # e.g. ["new chat"]: the whole message, any case
    restart_after_errors: int = Field(default=3, ge=0)  # bot.conversation.breakdown; 0: never


class UsageSettings(_Section):
    """What the model may spend (`bot.usage`): tokens in and out per day; 0 is no cap."""

    chat_daily_tokens: int = Field(default=0, ge=0)  # each chat's replies
    background_daily_tokens: int = Field(default=0, ge=0)  # consolidation, flush, compaction
    owners_exempt: bool = True  # an owner's private chat is held by neither cap
    warn_share: float = Field(default=0.8, gt=0, le=1)  # the owners hear once at this share
    prices_file: Path = Path("config/prices.json")  # dollars per million tokens of known models


class StoreSettings(_Section):
    """Where the journal and the chats' queues live: the workspace's files (None, the default)
    or a PostgreSQL database shared by every replica (`postgresql://…`, bot.replicas)."""

    url: SecretStr | None = None  # a password may be in it: never shown
    worker_concurrency: int = Field(default=8, ge=1)  # chats one replica answers at once
    heartbeat: float = Field(default=2.0, gt=0)  # seconds between a replica's signs of life
    stalled_after: float = Field(default=10.0, gt=0)  # silent this long: its turns move on

    @field_validator("url")
    @classmethod
    def _postgres(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(
            ("postgresql://", "postgres://")
        ):
            raise ValueError("must be a PostgreSQL URL, e.g. postgresql://mnemo@db/mnemo")
        return value


class ReminderSettings(_Section):
    """Reminders and scheduled tasks (`bot.reminders`)."""

    poll_seconds: float = Field(default=1.0, gt=0)  # how often due items are looked for
    late_minutes: int = Field(default=2, ge=0)  # due longer ago than this: sent marked late
    task_tokens: int = Field(default=20_000, ge=0)  # one run of a scheduled task, at most
    daily_task_tokens: int = Field(default=200_000, ge=0)  # all tasks in a day, at most
    shown_in_prompt: int = Field(default=5, ge=0)  # the chat's next items the prompt shows


class WebSettings(_Section):
    """The memory page (`bot.web`, docs/web.md): off unless enabled, on loopback unless told."""

    enabled: bool = False
    host: str = "127.0.0.1"  # anything but loopback needs public_url (a reverse proxy's HTTPS)
    port: int = Field(default=8765, ge=0, le=65535)  # 0: a free port (tests)
    public_url: str | None = Field(default=None, pattern=r"^(https://|http://127\.0\.0\.1:)")
    link_minutes: int = Field(default=10, ge=1, le=60)  # a sign-in link works once, this long
    session_hours: int = Field(default=12, ge=1, le=24 * 30)  # then the browser signs in again

    @model_validator(mode="after")
    def _loopback(self) -> WebSettings:
        if self.host not in ("127.0.0.1", "::1", "localhost") and self.public_url is None:
            raise ValueError(f"web.host {self.host!r} is beyond loopback: set web.public_url")
        return self


class LogSettings(_Section):
    format: Literal["json", "console"] = "console"
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="BOT_",
        env_nested_delimiter="__",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        frozen=True,
    )

    workspace: Path = Path("./workspace")
    timezone: str = "UTC"
    persona: str = "You are Mnemo, a helpful personal assistant that remembers."
    telegram: TelegramSettings = TelegramSettings()
    llm: LLMSettings = LLMSettings()
    memory: MemorySettings = MemorySettings()
    compaction: CompactionSettings = CompactionSettings()
    session: SessionPolicySettings = SessionPolicySettings()
    rag: RagSettings = RagSettings()
    media: MediaSettings = MediaSettings()
    usage: UsageSettings = UsageSettings()
    store: StoreSettings = StoreSettings()
    reminders: ReminderSettings = ReminderSettings()
    web: WebSettings = WebSettings()
    log: LogSettings = LogSettings()

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @model_validator(mode="after")
    def _replicated(self) -> Settings:
        """Webhooks need the shared store: any replica may take a chat's update."""
        if self.telegram.mode == "webhook":
            if self.store.url is None:
                raise ValueError("telegram.mode 'webhook' needs store.url (postgresql://…)")
            if not self.telegram.webhook_url or self.telegram.webhook_secret is None:
                raise ValueError("telegram.mode 'webhook' needs webhook_url and webhook_secret")
        if self.web.enabled and self.store.url is not None:
            raise ValueError("web.enabled is for the embedded mode only for now (docs/web.md)")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        config_file = Path(os.environ.get(CONFIG_FILE_VAR, DEFAULT_CONFIG_FILE))
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_file)
        return (init_settings, env_settings, dotenv_settings, toml)


def load_settings(env_file: Path | None = Path(".env")) -> Settings:
    """Read settings once; a bad value becomes a `ConfigError` naming the variable, what is
    wrong and a valid example (`bot.settings_errors`)."""
    try:
        return Settings(_env_file=env_file)  # type: ignore[call-arg]
    except SettingsError as exc:
        cause = f": {exc.__cause__}" if exc.__cause__ else ""
        hint = (
            " (lists are JSON, e.g. [123, 456])" if "JSON" in type(exc.__cause__).__name__ else ""
        )
        raise ConfigError(f"{exc}{cause}{hint}") from None
    except ValidationError as exc:
        raise ConfigError(describe(exc, Settings)) from None


def secret_values(settings: Settings) -> tuple[str, ...]:
    """The bot token, the model's key, the embedding, transcription and LightRAG keys (sent
    in a header only; cut all the same), whichever are set: what no output may show."""
    rag = settings.rag
    values = (
        settings.telegram.token,
        settings.llm.api_key,
        rag.embedding_api_key,
        rag.lightrag_api_key,
        settings.media.transcription_api_key,
        settings.telegram.webhook_secret,
        settings.store.url,
    )
    found = [v.get_secret_value() for v in values if v is not None and v.get_secret_value()]
    proxies = (settings.telegram.proxy, settings.llm.proxy)
    found += [p for url in proxies if url and (p := urlsplit(url).password)]  # user:password@
    return tuple(found)
