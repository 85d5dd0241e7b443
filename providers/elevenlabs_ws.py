"""ElevenLabs text-to-speech over its WebSocket input-streaming protocol (trio-websocket).

`wss://api.elevenlabs.io/v1/text-to-speech/{voice_id}/stream-input?model_id=&output_format=`
takes the text in pieces as it is produced and answers audio as soon as it has enough:
the transport for input that arrives incrementally (a voice agent's answer, sentence by
sentence). The protocol: the key in the `xi-api-key` header of the handshake; a first
message `{"text": " ", "voice_settings": {...}}` opens the stream; text messages
`{"text": "... ", "flush": true}` (`flush` makes the vendor speak what it holds now
instead of waiting for more); `{"text": ""}` ends the input. The vendor answers
`{"audio": <base64>, "isFinal": null, "normalizedAlignment": ...}` messages, then
`{"isFinal": true}`, then closes. An error is a message `{"message", "error", "code"}`
and a close with code 1008. A refused handshake is an HTTP answer with the HTTP API's
error body (mapped as for HTTP).

`SpeechSocket` is the incremental handle (`send`, `end`, `audio`); `speech_stream` over
the socket sends the whole input at once and relays the audio as it comes. Formats the
vendor cannot produce (wav, flac, aac) are asked as 24 kHz PCM and encoded at the end,
as over HTTP.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import attrs
import orjson
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from providers.audio_types import SpeechRequest
from providers.elevenlabs_speech import NATIVE_FORMATS, in_format, output_format, voice_settings
from providers.errors import (
    AuthenticationFailed,
    ModelOverloaded,
    ProviderError,
    StreamInterrupted,
    UpstreamHTTPError,
    UpstreamTimeout,
)
from providers.vendor_socket import VendorSockets
from providers.websocket_client import CLOSE_WAIT_S

# Provider setting choosing how `speech_stream` reaches ElevenLabs: "http" (default) or
# "websocket" (this module).
TRANSPORT_SETTING = "speech_transport"
TRANSPORTS = ("http", "websocket")
END_OF_INPUT = orjson.dumps({"text": ""})
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # one audio message (base64) is far below this


# -- messages out --------------------------------------------------------------------------


def stream_input_url(base_url: str, request: SpeechRequest) -> str:
    """The socket's URL: the HTTP base URL with its scheme made ws/wss."""
    parts = urlsplit(base_url.rstrip("/"))
    scheme = "wss" if parts.scheme == "https" else "ws"
    path = f"{parts.path}/v1/text-to-speech/{quote(request.voice, safe='')}/stream-input"
    query = urlencode({"model_id": request.model, "output_format": output_format(request)})
    return urlunsplit((scheme, parts.netloc, path, query, ""))


def opening_message(request: SpeechRequest) -> bytes:
    """The first message: a single space opens the stream, with the voice settings."""
    message: dict[str, Any] = {"text": " "}
    settings = voice_settings(request)
    if settings:
        message["voice_settings"] = settings
    return orjson.dumps(message)


def text_message(text: str, *, flush: bool) -> bytes:
    """A piece of text; the vendor wants each to end with a space (words stay apart)."""
    message: dict[str, Any] = {"text": text if text.endswith(" ") else text + " "}
    if flush:
        message["flush"] = True
    return orjson.dumps(message)


# -- messages in ---------------------------------------------------------------------------


@attrs.frozen
class ServerMessage:
    """One vendor message: audio bytes (possibly none), whether it is the last, and how
    many characters of the input its alignment says the audio speaks (spaces left out,
    0 without an alignment): what tells a caller which sentence the audio belongs to."""

    audio: bytes
    final: bool
    spoken_chars: int = 0


def aligned_chars(alignment: Any) -> int:
    """The characters, spaces left out, an `alignment` object covers (0 without one)."""
    chars = alignment.get("chars") if isinstance(alignment, dict) else None
    if not isinstance(chars, list):
        return 0
    return sum(1 for char in chars if isinstance(char, str) and char.strip())


@attrs.frozen
class VendorError:
    """An error message of the vendor: its `error` code and text."""

    code: str
    message: str


def parse_server_message(raw: str | bytes) -> ServerMessage | VendorError | None:
    """A vendor message; None when it is neither audio, an end nor an error."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    if data.get("error") or ("message" in data and "audio" not in data):
        return VendorError(str(data.get("error") or "error"), str(data.get("message") or ""))
    encoded = data.get("audio")
    try:
        audio = base64.b64decode(encoded, validate=True) if isinstance(encoded, str) else b""
    except (binascii.Error, ValueError):
        return None
    spoken = aligned_chars(data.get("alignment"))
    return ServerMessage(audio, data.get("isFinal") is True, spoken)


def map_vendor_error(provider: str, error: VendorError, model: str) -> ProviderError:
    """A session's error message mapped into our hierarchy by its code."""
    message = error.message or error.code
    if error.code in ("invalid_api_key", "needs_authorization", "unauthorized"):
        return AuthenticationFailed(provider, message)
    if error.code == "input_timeout_exceeded":
        return UpstreamTimeout(provider, message, timeout_ms=0)
    if error.code in ("quota_exceeded", "too_many_concurrent_requests", "rate_limit_exceeded"):
        return ModelOverloaded(provider, message, model=model)
    return UpstreamHTTPError(provider, message, status=502, vendor_code=error.code)


# -- the session ---------------------------------------------------------------------------


class SpeechSocket:
    """One open stream-input session: send text as it comes, read audio as it comes.

    Sending and reading may run in different tasks (a producer of sentences, a relay of
    audio). `audio` yields the vendor's bytes in the native format asked at the
    handshake and ends after the vendor's final message; a vendor error raises the
    mapped `ProviderError`, a dropped socket `StreamInterrupted`.
    """

    def __init__(self, socket: WebSocketConnection, provider_id: str, model: str) -> None:
        self._socket = socket
        self._provider = provider_id
        self._model = model

    async def begin(self, request: SpeechRequest) -> None:
        """Open the stream with the request's voice settings (the first message)."""
        await self._send(opening_message(request))

    async def send(self, text: str, *, flush: bool = False) -> None:
        """Add text; `flush` asks the vendor to speak everything held so far now."""
        if text:
            await self._send(text_message(text, flush=flush))

    async def end(self) -> None:
        """No more text: the vendor speaks what remains, then sends its final message."""
        await self._send(END_OF_INPUT)

    async def close(self) -> None:
        """End the session now (the caller gave up on it: a deadline passed), while the
        block that opened it goes on: the close handshake gets at most `CLOSE_WAIT_S`."""
        with trio.move_on_after(CLOSE_WAIT_S) as cleanup:
            cleanup.shield = True
            await self._socket.aclose()

    async def audio(self) -> AsyncGenerator[bytes, None]:
        while True:
            message = await self.receive()
            if message.audio:
                yield message.audio
            if message.final:
                return

    async def receive(self) -> ServerMessage:
        """The vendor's next message that is audio or the end (others are skipped); a
        vendor error raises the mapped `ProviderError`, a dropped socket
        `StreamInterrupted`. Cancelling it loses nothing but the wait."""
        while True:
            try:
                raw = await self._socket.get_message()
            except ConnectionClosed as exc:
                raise StreamInterrupted(self._provider, "the speech socket closed early") from exc
            message = parse_server_message(raw)
            if isinstance(message, VendorError):
                raise map_vendor_error(self._provider, message, self._model)
            if message is not None:
                return message

    async def _send(self, data: bytes) -> None:
        try:
            await self._socket.send_message(data.decode())
        except ConnectionClosed as exc:
            raise StreamInterrupted(self._provider, "the speech socket closed early") from exc


class ElevenLabsWebSocket(VendorSockets):
    """Speech over the stream-input socket (mixed into the ElevenLabs adapter)."""

    def uses_speech_socket(self) -> bool:
        """Whether the provider's settings chose the socket for streamed speech (a voice
        pipeline then feeds one socket per answer, sentence by sentence)."""
        return self.endpoint.settings.get(TRANSPORT_SETTING) == "websocket"

    @asynccontextmanager
    async def speech_socket(self, request: SpeechRequest) -> AsyncIterator[SpeechSocket]:
        """An open session for `request`'s voice, model and format (its `input` is not
        sent: the caller sends text). Leaving the block closes the socket, by any path;
        on cancellation the TCP connection is closed at once."""
        url = stream_input_url(self.endpoint.base_url, request)
        key = [(b"xi-api-key", self.endpoint.api_key.encode())]
        async with self.vendor_socket(
            url, key, model=request.model, max_message_size=MAX_MESSAGE_BYTES
        ) as socket:
            session = SpeechSocket(socket, self.provider_id, request.model)
            await session.begin(request)
            yield session

    @asynccontextmanager
    async def speech_stream_ws(self, request: SpeechRequest) -> AsyncIterator[AsyncIterator[bytes]]:
        """The whole input over the socket, the audio relayed as it comes."""
        async with self.speech_socket(request) as session:
            await session.send(request.input, flush=True)
            await session.end()
            async with aclosing(_formatted(session.audio(), request)) as chunks:
                yield chunks


async def _formatted(
    audio: AsyncGenerator[bytes, None], request: SpeechRequest
) -> AsyncGenerator[bytes, None]:
    """Native formats pass through; the others are encoded once the PCM is whole."""
    async with aclosing(audio) as pieces:
        if request.response_format in NATIVE_FORMATS:
            async for piece in pieces:
                yield piece
            return
        held = [piece async for piece in pieces]
    await trio.lowlevel.checkpoint()
    yield await in_format(b"".join(held), request)
