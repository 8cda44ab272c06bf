"""Doctor's checks of what comes with a message: voice notes (the transcription service hears a
short silence) and photos (the model, when it reads images, is shown a one-pixel picture).

Either failing is a warning, not a failure: text still works, and the line says what to set.
"""

from __future__ import annotations

import asyncio
import io
import struct
import wave
import zlib

from bot.cli.findings import Finding, secret
from bot.errors import MnemoError
from bot.llm.failures import API_KEY_VAR
from bot.llm.openai_chat import OpenAIChat
from bot.llm.transcription import OpenAITranscriber
from bot.llm.windows import ModelWindows
from bot.models import ChatMessage, Image
from bot.settings import Settings
from bot.storage.workspace import Workspace

TIMEOUT = 60.0
TURN_OFF_VOICE = "BOT_MEDIA__TRANSCRIPTION_MODEL= (empty) turns voice notes off"
NO_KEY = "no API key for the model yet"
# one missing key is one FAIL (the model's): what needs the same key is not checked without it
NOT_CHECKED = "not checked: {what} use the model's API key, which is missing (see model)"


def silence_wav(seconds: float = 0.2, rate: int = 16_000) -> bytes:
    """A short mono 16-bit WAV of silence: what a transcription service is asked to hear."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(b"\0\0" * int(seconds * rate))
    return out.getvalue()


def pixel_png() -> bytes:
    """A one-pixel white PNG: what a model that reads images is shown."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\0\xff\xff\xff")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


async def check_transcription(settings: Settings) -> Finding:
    media = settings.media
    if not media.transcription_model.strip():
        return Finding("ok", "off (BOT_MEDIA__TRANSCRIPTION_MODEL is empty): voice notes are kept")
    if media.transcription_api_key is None and settings.llm.api_key is None:
        return Finding("warn", NOT_CHECKED.format(what="voice notes"))
    api_key = secret(media.transcription_api_key or settings.llm.api_key, API_KEY_VAR, NO_KEY)
    transcriber = OpenAITranscriber.from_settings(settings, api_key)
    assert transcriber is not None  # a model is set
    where = media.transcription_base_url or settings.llm.base_url
    try:
        async with asyncio.timeout(TIMEOUT):
            await transcriber.transcribe(
                silence_wav(), file_name="doctor.wav", mime_type="audio/wav"
            )
    except (MnemoError, TimeoutError) as exc:
        why = str(exc) or f"no answer within {TIMEOUT:g} s"
        return Finding(
            "warn",
            f"{media.transcription_model} at {where}: {why}; voice notes will not be heard "
            f"(set BOT_MEDIA__TRANSCRIPTION_BASE_URL / _MODEL, or {TURN_OFF_VOICE})",
        )
    finally:
        await transcriber.stop()
    return Finding("ok", f"{media.transcription_model} heard a test recording at {where}")


async def check_vision(settings: Settings) -> Finding:
    model = settings.llm.model
    windows = ModelWindows.from_settings(settings, Workspace(settings.workspace))
    told = settings.media.vision
    sees = windows.sees_images(model) if told is None else told
    source = "BOT_MEDIA__VISION" if told is not None else "config/models.json"
    if not sees:
        return Finding(
            "ok",
            f"off: {model} is not said to read images ({source}); photos are kept, and "
            "BOT_MEDIA__VISION=true shows them to the model",
        )
    if settings.llm.api_key is None:
        return Finding("warn", NOT_CHECKED.format(what="photos"))
    api_key = secret(settings.llm.api_key, API_KEY_VAR, NO_KEY)
    llm = OpenAIChat.from_settings(settings.llm, api_key, windows)
    picture = ChatMessage(
        role="user", content="What colour is this?", images=(Image("image/png", pixel_png()),)
    )
    try:
        async with asyncio.timeout(TIMEOUT):
            await llm.complete([picture], max_tokens=1)
    except (MnemoError, TimeoutError) as exc:
        why = str(exc) or f"no answer within {TIMEOUT:g} s"
        return Finding(
            "warn",
            f"{model} refused a picture ({why}): set BOT_MEDIA__VISION=false if it does not "
            "read images",
        )
    finally:
        await llm.close()
    return Finding("ok", f"{model} was shown a picture and answered ({source})")
