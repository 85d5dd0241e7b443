"""Mistral's realtime transcription (Voxtral Realtime) over a WebSocket:
`wss://api.mistral.ai/v1/audio/transcriptions/realtime?model=voxtral-mini-transcribe-realtime-2602`.

The protocol as the vendor's SDK speaks it (`mistralai.extra.realtime`): the key in
`Authorization: Bearer`; the server opens with `session.created`; the client sets the
audio format with `session.update` (`{"audio_format": {"encoding": "pcm_s16le",
"sample_rate": 16000}, "language": ...}`), sends the audio as it is spoken
(`input_audio.append`, base64 PCM, at most 256 KiB decoded a message), then
`input_audio.flush` and `input_audio.end` at the end of the turn. The server answers
`transcription.text.delta` pieces while the user speaks (Voxtral Realtime recognises as
the audio comes, not after it), `transcription.language`, `transcription.segment`, and
one `transcription.done` with the whole text; an error is `{"type": "error", "error":
{"message", "code"}}`, `code` an HTTP status. Only the realtime models stream this way
(`transcribes_live`); the batch Voxtral models answer `POST /v1/audio/transcriptions`.

That endpoint does not serve the realtime models, so an uploaded file sent to one is
transcribed through the same socket (`transcribe_file_live`): decoded to 16 kHz PCM as
it is sent (`providers.clip_pcm`), as fast as the socket takes it, and the session's
`transcription.done` is the answer.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any

import orjson
import trio

from providers.audio_types import (
    LiveTranscriptionRequest,
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from providers.clip_pcm import clip_pcm
from providers.errors import ProviderError, StreamInterrupted
from providers.vendor_socket import FedAudio, TextSocket, VendorSockets, read_event, socket_url
from streams.held import background

LIVE_PATH = "/v1/audio/transcriptions/realtime"
MAX_APPEND_BYTES = 256 * 1024  # decoded audio in one `input_audio.append`
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
LIVE_RATES = frozenset({8_000, 16_000, 22_050, 44_100, 48_000})
FILE_RATE = 16_000  # what an uploaded file is decoded to for the socket
DECODES_AT_ONCE = 2  # files decoded for the socket at a time, per adapter
END_OF_AUDIO = (
    orjson.dumps({"type": "input_audio.flush"}).decode(),
    orjson.dumps({"type": "input_audio.end"}).decode(),
)


def is_live_model(model: str) -> bool:
    """Voxtral's realtime models (`voxtral-mini-transcribe-realtime-2602`...)."""
    return model.startswith("voxtral") and "realtime" in model


def session_update(request: LiveTranscriptionRequest) -> dict[str, Any]:
    session: dict[str, Any] = {
        "audio_format": {"encoding": "pcm_s16le", "sample_rate": request.rate},
    }
    if request.language:
        session["language"] = request.language
    return {"type": "session.update", "session": session}


def live_event(
    data: Mapping[str, Any], request: LiveTranscriptionRequest, seconds: float
) -> TranscriptEvent | tuple[int, str] | None:
    """What a server event says: text, the end, or an error's (status, message); None
    for one that only informs."""
    kind = data.get("type")
    if kind == "transcription.text.delta":
        return TranscriptDelta(str(data.get("text") or ""))
    if kind == "transcription.done":
        language = data.get("language")
        text = str(data.get("text") or "").strip()
        found = str(language) if isinstance(language, str) and language else request.language
        return TranscriptDone(TranscriptionResult(text, found, seconds))
    if kind == "error":
        return _error_of(data.get("error"))
    return None


def _error_of(error: Any) -> tuple[int, str]:
    error = error if isinstance(error, dict) else {}
    code = error.get("code")
    status = code if isinstance(code, int) and 400 <= code < 600 else 502
    message = error.get("message")
    if isinstance(message, dict):
        message = message.get("detail")
    return status, str(message or "realtime transcription error")


class MistralLive(VendorSockets):
    """Voxtral Realtime (mixed into the Mistral adapter)."""

    def transcribes_live(self, model: str) -> bool:
        return is_live_model(model)

    @asynccontextmanager
    async def transcribe_live(
        self, request: LiveTranscriptionRequest, audio: AsyncIterable[bytes]
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        """See `Provider.transcribe_live`: one realtime session for the turn."""
        if request.rate not in LIVE_RATES:
            raise ValueError(f"Voxtral Realtime takes no {request.rate} Hz audio")
        url = socket_url(self.endpoint.base_url, LIVE_PATH, {"model": request.model})
        headers = [(b"authorization", f"Bearer {self.endpoint.api_key}".encode())]
        async with self.vendor_socket(
            url, headers, model=request.model, max_message_size=MAX_MESSAGE_BYTES
        ) as opened:
            socket = TextSocket(opened, self.provider_id)
            await self._opened(socket, request)
            await socket.send(orjson.dumps(session_update(request)).decode())
            fed = FedAudio(request.rate)
            async with background() as nursery:
                nursery.start_soon(_feed, socket, audio, fed)
                events = self._live_events(socket, request, fed)
                async with aclosing(events) as items:
                    yield items
                nursery.cancel_scope.cancel()

    async def _opened(self, socket: TextSocket, request: LiveTranscriptionRequest) -> None:
        """Wait for `session.created` (an `error` first is the mapped failure)."""
        while True:
            data = read_event(await socket.receive())
            if data.get("type") == "session.created":
                return
            found = live_event(data, request, 0.0)
            if isinstance(found, tuple):
                raise self._failure(found, request.model)

    async def _live_events(
        self, socket: TextSocket, request: LiveTranscriptionRequest, fed: FedAudio
    ) -> AsyncGenerator[TranscriptEvent, None]:
        while True:
            found = live_event(read_event(await socket.receive()), request, fed.seconds)
            if isinstance(found, tuple):
                raise self._failure(found, request.model)
            if found is not None:
                yield found
            if isinstance(found, TranscriptDone):
                return

    async def transcribe_file_live(self, request: TranscriptionRequest) -> TranscriptionResult:
        """A whole file through a realtime session: the session's final text (see the
        module docstring). Cancellation closes the socket and the decoder."""
        async with self.stream_file_live(request) as events:
            async for event in events:
                if isinstance(event, TranscriptDone):
                    return event.result
        raise StreamInterrupted(self.provider_id, "the realtime session ended without its text")

    @asynccontextmanager
    async def stream_file_live(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        """A file's text as the realtime session recognises it, then its end; leaving
        closes the socket and the decoder."""
        live = LiveTranscriptionRequest(request.model, FILE_RATE, request.language, request.prompt)
        async with (
            clip_pcm(request.audio, FILE_RATE, self._decoding) as pcm,
            self.transcribe_live(live, pcm) as events,
        ):
            yield events

    @functools.cached_property
    def _decoding(self) -> trio.CapacityLimiter:
        """The adapter's own limit on FFmpeg decodes, so that files sent to the socket
        never take every worker thread of the process."""
        return trio.CapacityLimiter(DECODES_AT_ONCE)

    def _failure(self, error: tuple[int, str], model: str) -> ProviderError:
        status, message = error
        body = orjson.dumps({"message": message})
        return self.map_error(status, body, {}, model)


async def _feed(socket: TextSocket, audio: AsyncIterable[bytes], fed: FedAudio) -> None:
    """The audio up as it comes, then the end; a closed socket stops it quietly."""
    try:
        async for pcm in audio:
            for start in range(0, len(pcm), MAX_APPEND_BYTES):
                piece = pcm[start : start + MAX_APPEND_BYTES]
                fed.add(piece)
                encoded = base64.b64encode(piece).decode()
                message = {"type": "input_audio.append", "audio": encoded}
                await socket.send(orjson.dumps(message).decode())
        for end in END_OF_AUDIO:
            await socket.send(end)
    except StreamInterrupted:
        return
