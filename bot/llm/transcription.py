"""`OpenAITranscriber`: speech to text through an OpenAI-compatible `/v1/audio/transcriptions`
(OpenAI's whisper-1 or gpt-4o-transcribe, a faster-whisper or LocalAI server, Groq …).

A failure is a `TranscriptionFailed` whose message says why in a few words (the service did not
answer, refused the key, has no such endpoint or model): never the key, never the provider's
text (a refused key is echoed there). The tokens a service reports are handed to `spent`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from bot.errors import TranscriptionFailed
from bot.models import Usage

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
        import openai

        self.model = model
        self.spent = spent
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            http_client=openai.DefaultAsyncHttpxClient(proxy=proxy) if proxy else None,
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
        await self._client.close()
