"""OpenAI's Realtime API over a WebSocket (trio-websocket): `{base_url}/realtime`.

Two uses. A transcription session (`?intent=transcription`) is OpenAI's streaming
recogniser: the gateway sends `session.update` (`type: "transcription"`, 24 kHz PCM16,
the transcription model, no turn detection: the gateway's own VAD ends the turn), the
audio as it is spoken (`input_audio_buffer.append`), then `input_audio_buffer.commit` at
the end of the turn; OpenAI answers
`conversation.item.input_audio_transcription.delta` pieces and one `.completed` (or
`.failed`, or an `error` event). A conversation session (`?model=gpt-realtime`) is
relayed as it is by the gateway's realtime family (`realtime_socket`): this module only
opens it, with the provider's key.

The key goes in `Authorization: Bearer`; the beta protocol is asked with
`OpenAI-Beta: realtime=v1`. Audio reaches OpenAI at 24 kHz only, so other rates are
resampled here, across pieces. An in-band `error` event is mapped as the HTTP answer of
its type would be (`map_error`).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any

import attrs
import orjson

from providers.audio_codec import PcmResampler
from providers.audio_types import (
    LiveTranscriptionRequest,
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionResult,
)
from providers.errors import ProviderError, StreamInterrupted
from providers.vendor_socket import FedAudio, TextSocket, VendorSockets, read_event, socket_url
from streams.held import background

REALTIME_PATH = "/realtime"
# Provider setting: "native" relays sessions of OpenAI's realtime models to its Realtime
# API as they are (gateway.realtime.native); "cascade" (the default) composes them.
TRANSPORT_SETTING = "realtime_transport"
TRANSPORTS = ("cascade", "native")
REALTIME_RATE = 24_000  # the only PCM rate OpenAI's Realtime API takes
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # an audio delta is far below this
# Transcription models a transcription session takes (OpenAI's realtime guide).
LIVE_MODELS = frozenset(
    {
        "gpt-4o-transcribe",
        "gpt-4o-mini-transcribe",
        "gpt-transcribe",
        "gpt-realtime-whisper",
        "whisper-1",
    }
)
TRANSCRIPT = "conversation.item.input_audio_transcription."
# An error event's `type` (or `code`) and the HTTP status an answer of that kind has.
ERROR_STATUS: Mapping[str, int] = {
    "invalid_api_key": 401,
    "authentication_error": 401,
    "permission_error": 403,
    "model_not_found": 404,
    "rate_limit_exceeded": 429,
    "invalid_request_error": 400,
    "server_error": 500,
}


# -- messages out --------------------------------------------------------------------------


def transcription_session(request: LiveTranscriptionRequest) -> dict[str, Any]:
    """The GA `session.update` of a transcription session with no turn detection."""
    transcription: dict[str, Any] = {"model": request.model}
    if request.language:
        transcription["language"] = request.language
    if request.prompt:
        transcription["prompt"] = request.prompt
    audio_input = {
        "format": {"type": "audio/pcm", "rate": REALTIME_RATE},
        "transcription": transcription,
        "turn_detection": None,
    }
    session = {"type": "transcription", "audio": {"input": audio_input}}
    return {"type": "session.update", "session": session}


def append_message(pcm: bytes) -> str:
    audio = base64.b64encode(pcm).decode()
    return orjson.dumps({"type": "input_audio_buffer.append", "audio": audio}).decode()


COMMIT = orjson.dumps({"type": "input_audio_buffer.commit"}).decode()


# -- messages in ---------------------------------------------------------------------------


@attrs.frozen
class VendorError:
    """An `error` event, or a failed transcription: its `error` object."""

    error: Mapping[str, Any]

    @property
    def status(self) -> int:
        """The HTTP status an answer of this kind would have had."""
        for key in ("code", "type"):
            status = ERROR_STATUS.get(str(self.error.get(key)))
            if status is not None:
                return status
        return 502


def transcript_event(
    data: Mapping[str, Any], request: LiveTranscriptionRequest, seconds: float
) -> TranscriptEvent | VendorError | None:
    """What a transcription session's event says; None for one that only informs."""
    kind = data.get("type")
    if kind == TRANSCRIPT + "delta":
        return TranscriptDelta(str(data.get("delta") or ""))
    if kind == TRANSCRIPT + "completed":
        text = str(data.get("transcript") or "").strip()
        return TranscriptDone(TranscriptionResult(text, request.language, seconds))
    if kind in (TRANSCRIPT + "failed", "error"):
        error = data.get("error")
        return VendorError(error if isinstance(error, dict) else {})
    return None


# -- the adapter ---------------------------------------------------------------------------


class OpenAIRealtime(VendorSockets):
    """The Realtime API's sockets (mixed into the OpenAI adapter)."""

    @asynccontextmanager
    async def realtime_socket(
        self, query: Mapping[str, str], *, model: str, beta: bool = False
    ) -> AsyncIterator[TextSocket]:
        """A Realtime session opened with the provider's key (`?model=` or
        `?intent=` in `query`); the refusals of `vendor_socket`."""
        url = socket_url(self.endpoint.base_url, REALTIME_PATH, query)
        headers = [(b"authorization", f"Bearer {self.endpoint.api_key}".encode())]
        if beta:
            headers.append((b"openai-beta", b"realtime=v1"))
        async with self.vendor_socket(
            url, headers, model=model, max_message_size=MAX_MESSAGE_BYTES
        ) as socket:
            yield TextSocket(socket, self.provider_id)

    def relays_realtime(self) -> bool:
        """Whether the workspace asked for its realtime models to be relayed as they are."""
        return self.endpoint.settings.get(TRANSPORT_SETTING) == "native"

    def realtime_error(self, data: Mapping[str, Any], model: str) -> ProviderError:
        """An upstream session's `error` event, mapped as its HTTP answer would be."""
        error = data.get("error")
        return self._vendor_error(VendorError(error if isinstance(error, dict) else {}), model)

    def transcribes_live(self, model: str) -> bool:
        return model in LIVE_MODELS

    @asynccontextmanager
    async def transcribe_live(
        self, request: LiveTranscriptionRequest, audio: AsyncIterable[bytes]
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        """See `Provider.transcribe_live`: one transcription session for the turn."""
        query = {"intent": "transcription"}
        async with self.realtime_socket(query, model=request.model) as socket:
            await socket.send(orjson.dumps(transcription_session(request)).decode())
            fed = FedAudio(request.rate)
            async with background() as nursery:
                nursery.start_soon(_feed, socket, audio, fed)
                async with aclosing(self._transcript(socket, request, fed)) as events:
                    yield events
                nursery.cancel_scope.cancel()

    async def _transcript(
        self, socket: TextSocket, request: LiveTranscriptionRequest, fed: FedAudio
    ) -> AsyncGenerator[TranscriptEvent, None]:
        while True:
            event = transcript_event(read_event(await socket.receive()), request, fed.seconds)
            if isinstance(event, VendorError):
                raise self._vendor_error(event, request.model)
            if event is not None:
                yield event
            if isinstance(event, TranscriptDone):
                return

    def _vendor_error(self, event: VendorError, model: str) -> ProviderError:
        body = orjson.dumps({"error": dict(event.error)})
        return self.map_error(event.status, body, {}, model)


async def _feed(socket: TextSocket, audio: AsyncIterable[bytes], fed: FedAudio) -> None:
    """The turn's audio up as it comes, at 24 kHz, then the commit. A socket that closes
    stops it quietly: the reader sees the close and says so."""
    resample = PcmResampler(fed.rate, REALTIME_RATE)
    try:
        async for pcm in audio:
            fed.add(pcm)
            data = resample(pcm)
            if data:  # the resampler may hold a short piece back for the next
                await socket.send(append_message(data))
        tail = resample.flush()
        if tail:
            await socket.send(append_message(tail))
        await socket.send(COMMIT)
    except StreamInterrupted:
        return
