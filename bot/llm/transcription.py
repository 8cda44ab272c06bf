"""`OpenAITranscriber`: speech to text through an OpenAI-compatible `/v1/audio/transcriptions`
(OpenAI's whisper-1 or gpt-4o-transcribe, a faster-whisper or LocalAI server, Groq …).

A failure is a `TranscriptionFailed` whose message says why in a few words (the service did not
answer, refused the key, has no such endpoint or model): never the key, never the provider's
text (a refused key is echoed there). The tokens a service reports are handed to `spent`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cached_property
from typing import TYPE_CHECKING

import structlog

from bot.errors import TranscriptionFailed
from bot.models import Usage
from bot.settings import Settings

if TYPE_CHECKING:
    import openai

log = structlog.get_logger(__name__)

_REFUSALS = {
    401: "the transcription service refused the key",
    403: "the transcription service refused the key",
    404: "the transcription service has no such endpoint or model",
    413: "the recording is too large for the transcription service",
    429: "the transcription service is busy or out of credit",
}


class OpenAITranscriber:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float,
        max_retries: int = 1,
        spent: Callable[[str, Usage], Awaitable[None]] | None = None,  # (model, tokens)
        proxy: str | None = None,  # an http(s):// or socks5:// proxy for every request
    ) -> None:
        self.model = model
        self.spent = spent
        self._base_url, self._api_key, self._proxy = base_url, api_key, proxy
        self._timeout, self._max_retries = timeout, max_retries

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        api_key: str,
        spent: Callable[[str, Usage], Awaitable[None]] | None = None,
    ) -> OpenAITranscriber | None:
        """Speech to text at its own endpoint, or the chat model's (and its key); None when
        `media.transcription_model` is empty."""
        media = settings.media
        if not media.transcription_model.strip():
            return None
        key = media.transcription_api_key
        return cls(
            base_url=media.transcription_base_url or settings.llm.base_url,
            api_key=key.get_secret_value() if key is not None else api_key,
            model=media.transcription_model,
            timeout=media.transcription_timeout,
            spent=spent,
            proxy=settings.llm.proxy,
        )

    @cached_property
    def _client(self) -> openai.AsyncOpenAI:
        """Made at the first recording: the SDK is imported then, not at the start."""
        import openai

        proxied = openai.DefaultAsyncHttpxClient(proxy=self._proxy) if self._proxy else None
        return openai.AsyncOpenAI(
            base_url=self._base_url,
            api_key=self._api_key,
            timeout=self._timeout,
            max_retries=self._max_retries,
            http_client=proxied,
        )

    async def transcribe(self, audio: bytes, *, file_name: str, mime_type: str) -> str:
        """The words spoken in `audio` ("" when none); `TranscriptionFailed` when the service
        cannot say."""
        import openai

        try:
            result = await self._client.audio.transcriptions.create(
                model=self.model, file=(file_name, audio, mime_type or "application/octet-stream")
            )
        except openai.APIStatusError as exc:
            log.warning("transcription_refused", status=exc.status_code, model=self.model)
            down = "is down" if exc.status_code >= 500 else "failed"
            reason = _REFUSALS.get(exc.status_code, f"the transcription service {down}")
            raise TranscriptionFailed(f"{reason} (HTTP {exc.status_code})") from None
        except openai.APIError as exc:  # connection, timeout
            log.warning("transcription_unreachable", error=type(exc).__name__)
            raise TranscriptionFailed("the transcription service did not answer") from None
        usage = getattr(result, "usage", None)
        if self.spent is not None and getattr(usage, "type", None) == "tokens":
            tokens = Usage(
                prompt_tokens=getattr(usage, "input_tokens", 0) or 0,
                completion_tokens=getattr(usage, "output_tokens", 0) or 0,
            )
            await self.spent(self.model, tokens)
        return result.text.strip()

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        if "_client" in self.__dict__:  # made (`cached_property`)
            await self._client.close()
