"""Gemini speech generation (text-to-speech) over the Gemini API.

`generateContent` on a TTS model (`gemini-2.5-flash-preview-tts`) with
`responseModalities: ["AUDIO"]` and a prebuilt voice answers base64 16-bit PCM at 24 kHz
in one `inlineData` part; the adapter encodes it in the requested format (PyAV, in a
worker thread). The API sends the clip whole, so a streamed request yields it at once.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from providers.audio_codec import Pcm, encode
from providers.audio_types import PCM_RATE, SpeechAudio, SpeechRequest
from providers.errors import UpstreamHTTPError
from providers.google_stt import GoogleTranscription

TTS_API_VERSION = "/v1beta"


def tts_payload(request: SpeechRequest) -> dict[str, Any]:
    voice = {"prebuiltVoiceConfig": {"voiceName": request.voice}}
    return {
        "contents": [{"role": "user", "parts": [{"text": request.input}]}],
        "generationConfig": {
            "responseModalities": ["AUDIO"],
            "speechConfig": {"voiceConfig": voice},
        },
    }


def pcm_of(data: Mapping[str, Any]) -> bytes | None:
    """The PCM of the first audio part of a `generateContent` answer, or None."""
    for candidate in data.get("candidates") or ():
        for part in (candidate.get("content") or {}).get("parts") or ():
            inline = part.get("inlineData") or part.get("inline_data")
            if inline and str(inline.get("mimeType", "")).startswith("audio/"):
                try:
                    return base64.b64decode(inline.get("data") or "", validate=True)
                except (binascii.Error, ValueError):
                    return None
    return None


class GoogleAudio(GoogleTranscription):
    """Speech synthesis, and transcription (`providers.google_stt`), on the Gemini API
    (mixed into the Google adapter)."""

    async def speech(self, request: SpeechRequest) -> SpeechAudio:
        name = request.model.removeprefix("models/")
        path = f"{TTS_API_VERSION}/models/{name}:generateContent"
        data = await self.post_json(path, tts_payload(request), model=request.model)
        pcm = pcm_of(data) if isinstance(data, dict) else None
        if not pcm:
            raise UpstreamHTTPError(self.provider_id, "the answer held no audio", status=502)
        clip = Pcm(pcm[: len(pcm) // 2 * 2], PCM_RATE)
        encoded = await trio.to_thread.run_sync(encode, clip, request.response_format)
        return SpeechAudio(encoded, request.response_format, len(request.input))

    @asynccontextmanager
    async def speech_stream(self, request: SpeechRequest) -> AsyncIterator[AsyncIterator[bytes]]:
        audio = await self.speech(request)
        yield _once(audio.data)


async def _once(data: bytes) -> AsyncGenerator[bytes, None]:
    yield data
