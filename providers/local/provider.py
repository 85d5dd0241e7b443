"""The `local` adapter: eSpeak NG for speech, Whisper tiny.en for transcription, no network.

It is the last candidate of every audio chain, so a voice agent keeps working (with a
plainer voice and a weaker ear) when every vendor is down. The engines block and use the
CPU, so each call runs in a worker thread under `limiter`; cancelling a call abandons no
thread: the caller waits for the engine's current step (a sentence, a segment) to end.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import trio

from providers.audio_codec import AudioDecodeError, Pcm, decode, encode
from providers.audio_types import (
    SpeechAudio,
    SpeechRequest,
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from providers.base import Provider, ProviderEndpoint
from providers.errors import InvalidUpstreamRequest
from providers.local.espeak import Espeak, EspeakError, LazyEspeak
from providers.local.whisper import Recognised, Whisper, result_of

STREAM_CHUNK = 8192  # bytes of encoded audio per streamed piece
DEFAULT_THREADS = 2


class LocalProvider(Provider):
    """Offline speech synthesis and recognition.

    Built like the HTTP adapters (`client`, `endpoint`) so the registry treats it alike;
    `client` is unused. `endpoint.settings["threads"]` bounds the engines' concurrency.
    """

    def __init__(self, client: Any, endpoint: ProviderEndpoint) -> None:
        self.provider_id = endpoint.provider_id
        threads = int(endpoint.settings.get("threads") or DEFAULT_THREADS)
        self.limiter = trio.CapacityLimiter(threads)
        self._espeak = LazyEspeak()
        self._whisper = Whisper(threads=threads)

    # -- speech ------------------------------------------------------------------------

    async def speech(self, request: SpeechRequest) -> SpeechAudio:
        """The whole clip, encoded in the requested format."""
        data = await trio.to_thread.run_sync(self._synthesise, request, limiter=self.limiter)
        return SpeechAudio(data, request.response_format, len(request.input))

    @asynccontextmanager
    async def speech_stream(self, request: SpeechRequest) -> AsyncIterator[AsyncIterator[bytes]]:
        """The clip in pieces; eSpeak NG synthesises far faster than real time, so the
        whole clip is made first and relayed in `STREAM_CHUNK` pieces."""
        data = await trio.to_thread.run_sync(self._synthesise, request, limiter=self.limiter)
        yield _pieces(data)

    def _synthesise(self, request: SpeechRequest) -> bytes:
        engine: Espeak = self._espeak()
        try:
            pcm = engine.synthesize(request.input, voice=request.voice, speed=request.speed)
        except EspeakError as exc:
            raise InvalidUpstreamRequest(self.provider_id, str(exc), param="voice") from None
        return encode(pcm, request.response_format)

    # -- transcription -----------------------------------------------------------------

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        pcm = await trio.to_thread.run_sync(_decoded, request, limiter=self.limiter)
        return await trio.to_thread.run_sync(
            lambda: self._whisper.transcribe(
                pcm, prompt=request.prompt, words=request.word_timestamps
            ),
            limiter=self.limiter,
        )

    @asynccontextmanager
    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        """Each segment's text as soon as the model has decoded it, then the whole result.

        The recogniser is a generator advanced one segment at a time in a worker thread
        (under the limiter), so no task outlives a step: leaving the context between steps
        closes the generator, and a cancelled step ends when its segment does.
        """
        pcm = await trio.to_thread.run_sync(_decoded, request, limiter=self.limiter)
        segments = self._whisper.segments(pcm, prompt=request.prompt, words=request.word_timestamps)
        try:
            async with aclosing(self._events(segments, pcm.duration_s)) as events:
                yield events
        finally:
            segments.close()

    async def _events(
        self, segments: Generator[Recognised, None, None], duration_s: float
    ) -> AsyncGenerator[TranscriptEvent, None]:
        parts: list[Recognised] = []
        while True:
            part = await trio.to_thread.run_sync(next, segments, None, limiter=self.limiter)
            if part is None:
                break
            parts.append(part)
            if part.segment.text:
                yield TranscriptDelta(("" if len(parts) == 1 else " ") + part.segment.text)
        yield TranscriptDone(result_of(parts, duration_s))

    async def list_models(self) -> list[str]:
        return ["local-espeak-ng", "local-whisper-tiny-en"]


def _decoded(request: TranscriptionRequest) -> Pcm:
    """The clip decoded from a reader of its own (a spooled upload is never copied whole
    before decoding)."""
    try:
        with request.audio.source.open() as reader:
            return decode(reader)
    except AudioDecodeError as exc:
        raise InvalidUpstreamRequest("local", str(exc), param="file") from None


async def _pieces(data: bytes) -> AsyncIterator[bytes]:
    for chunk in _chunks(data):
        yield chunk


def _chunks(data: bytes) -> Iterator[bytes]:
    for offset in range(0, len(data), STREAM_CHUNK):
        yield data[offset : offset + STREAM_CHUNK]
