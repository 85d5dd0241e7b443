"""ElevenLabs text-to-speech over HTTP: `POST /v1/text-to-speech/{voice_id}` and its
`/stream` variant, which sends audio as the model produces it.

ElevenLabs produces MP3, Opus and raw PCM (`output_format` = `mp3_44100_128`,
`opus_48000_64`, `pcm_24000`); the other formats (wav, flac, aac) are asked as 24 kHz PCM
and encoded here (PyAV, in a worker thread), so the adapter always answers in the
requested format. A streamed request for one of those is encoded when the PCM is whole.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any
from urllib.parse import quote

import orjson
import trio

from providers.audio_codec import Pcm, encode
from providers.audio_types import PCM_RATE, SpeechAudio, SpeechRequest
from providers.errors import StreamInterrupted
from providers.http import HttpProvider
from providers.upstream import UpstreamError, UpstreamStream

NATIVE_FORMATS = {"mp3": "mp3_44100_128", "opus": "opus_48000_64", "pcm": "pcm_24000"}


def output_format(request: SpeechRequest) -> str:
    return NATIVE_FORMATS.get(request.response_format, "pcm_24000")


def voice_settings(request: SpeechRequest) -> dict[str, Any]:
    """The request's voice controls as ElevenLabs names them (only those given)."""
    settings: dict[str, Any] = {}
    chosen = request.voice_settings
    if chosen is not None:
        for name in ("stability", "similarity_boost", "style", "use_speaker_boost"):
            value = getattr(chosen, name)
            if value is not None:
                settings[name] = value
    speed = chosen.speed if chosen is not None and chosen.speed is not None else request.speed
    if speed != 1.0:  # ElevenLabs takes 0.7-1.2; the request's wider range is clamped
        settings["speed"] = min(1.2, max(0.7, speed))
    return settings


def tts_payload(request: SpeechRequest) -> dict[str, Any]:
    settings = voice_settings(request)
    payload: dict[str, Any] = {"text": request.input, "model_id": request.model}
    if settings:
        payload["voice_settings"] = settings
    return payload


class ElevenLabsSpeech(HttpProvider):
    """Speech synthesis over ElevenLabs' HTTP API (mixed into its adapter)."""

    def _tts_url(self, request: SpeechRequest, *, stream: bool) -> str:
        path = f"/v1/text-to-speech/{quote(request.voice, safe='')}"
        return self.url(path + ("/stream" if stream else "")) + (
            f"?output_format={output_format(request)}"
        )

    async def speech(self, request: SpeechRequest) -> SpeechAudio:
        body = orjson.dumps(tts_payload(request))
        try:
            response = await self.client.request(
                "POST", self._tts_url(request, stream=False), self._headers, body
            )
        except UpstreamError as exc:
            raise self.transport_error(exc) from exc
        if response.status >= 400:
            raise self.map_error(response.status, response.body, response.headers, request.model)
        data = await in_format(response.body, request)
        return SpeechAudio(data, request.response_format, len(request.input))

    @asynccontextmanager
    async def speech_stream(self, request: SpeechRequest) -> AsyncIterator[AsyncIterator[bytes]]:
        body = orjson.dumps(tts_payload(request))
        url = self._tts_url(request, stream=True)
        async with (
            self.stream_body(url, self._headers, body, model=request.model) as response,
            aclosing(self._audio(response, request)) as chunks,
        ):
            yield chunks

    async def _audio(
        self, response: UpstreamStream, request: SpeechRequest
    ) -> AsyncGenerator[bytes, None]:
        native = request.response_format in NATIVE_FORMATS
        held: list[bytes] = []
        try:
            async for chunk in response:
                if native:
                    yield chunk
                else:
                    held.append(chunk)
        except UpstreamError as exc:
            raise StreamInterrupted(self.provider_id, "the audio stream broke") from exc
        if not native:
            yield await in_format(b"".join(held), request)


async def in_format(data: bytes, request: SpeechRequest) -> bytes:
    """Audio asked in the vendor's native format as the request's format (PCM encoded
    off the loop for wav, flac and aac)."""
    if request.response_format in NATIVE_FORMATS:
        return data
    pcm = Pcm(data[: len(data) // 2 * 2], PCM_RATE)
    return await trio.to_thread.run_sync(encode, pcm, request.response_format)
