"""ElevenLabs' WebSocket input streaming in the simulator:
`GET /v1/text-to-speech/{voice_id}/stream-input?model_id=&output_format=` upgraded to a
WebSocket (trio-websocket, see `providers.sim.websocket`).

The protocol as the vendor documents it: the client's first message opens the stream
(`{"text": " ", "voice_settings": {...}, "generation_config": {...}}`, with the key in
the `xi-api-key` header or as `xi_api_key` here); then text messages
(`{"text": "Hello ", "try_trigger_generation": true}`), where `"flush": true` forces the
text buffered so far to be spoken now; `{"text": ""}` ends the input. The server answers
`{"audio": <base64>, "isFinal": null, "normalizedAlignment": {...}, "alignment": {...}}`
messages and, once everything is spoken, `{"isFinal": true}`, then closes. An error is a
message `{"message", "error", "code": 1008}` followed by a close with code 1008; no text
for `inactivity_timeout` seconds (default 20) is `input_timeout_exceeded`.

The simulation speaks buffered text at each flush and at the end of input (the vendor
also starts on its own once enough text is buffered; the simulator waits for a flush).
Audio is real eSpeak NG speech in the asked `output_format` (`mp3_*`, `opus_*`,
`pcm_<rate>`); each audio message carries the alignment of the characters it speaks (the text
spread evenly over the pieces, as the vendor aligns each chunk).
Refusals before the session (no key, unknown voice or format, a fault's status) reject
the handshake with the HTTP status and `{"detail"}` body of the HTTP API.
"""

from __future__ import annotations

import base64
import collections
import json
from functools import partial
from typing import Any

import attrs
import trio
from trio_websocket import WebSocketConnection

from providers.audio_types import SpeechFormat
from providers.sim.audio import SimAudio, pieces
from providers.sim.core import (
    Fault,
    Route,
    SimContext,
    SimRequest,
    SimResponse,
    SimUpgrade,
    StreamCut,
)
from providers.sim.elevenlabs import VENDOR, _Refusal, error_response
from providers.sim.elevenlabs_tts import KNOWN_VOICES
from providers.sim.faults import apply_fault

DEFAULT_MODEL = "eleven_flash_v2_5"
DEFAULT_INACTIVITY_S = 20
MAX_INACTIVITY_S = 180
POLICY_VIOLATION = 1008
FAMILIES: dict[str, SpeechFormat] = {"mp3": "mp3", "opus": "opus", "pcm": "pcm"}


class _SessionError(Exception):
    """Ends a session with an error message and a 1008 close."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@attrs.frozen
class _Session:
    """One stream-input session's settings, fixed at the handshake."""

    audio: SimAudio
    fmt: SpeechFormat
    rate: int
    keyed: bool  # the key came in a header; else the first message must carry it
    fault: Fault | None
    inactivity_s: float
    # Messages read while stalling (to see the client leave), not yet handled.
    pending: collections.deque[str | bytes] = attrs.field(factory=collections.deque)


def _output_format(value: str) -> tuple[SpeechFormat, int] | None:
    """(container, PCM rate) of an `output_format` such as `pcm_16000`; None if unknown."""
    family, _, rest = value.partition("_")
    fmt = FAMILIES.get(family)
    if fmt is None:
        return None
    rate = int(rest.split("_")[0]) if rest.split("_")[0].isdigit() else 24_000
    if fmt == "pcm" and rate not in (8_000, 16_000, 22_050, 24_000, 44_100, 48_000):
        return None
    return fmt, rate


def _inactivity(value: str | None) -> float | None:
    if value is None:
        return DEFAULT_INACTIVITY_S
    if not value.isdigit() or not 0 < int(value) <= MAX_INACTIVITY_S:
        return None
    return int(value)


async def stream_input(request: SimRequest, context: SimContext) -> SimResponse | SimUpgrade:
    """The handshake: refuse with an HTTP answer, or accept with a session."""
    if request.headers.get("upgrade", "").lower() != "websocket":
        return error_response(426, "This endpoint speaks WebSocket only.", "upgrade_required")
    voice = request.path_params.get("voice_id", "")
    if voice not in KNOWN_VOICES:
        message = f"A voice with voice_id {voice} was not found."
        return error_response(404, message, "voice_not_found")
    chosen = _output_format(request.query.get("output_format", "mp3_44100_128"))
    inactivity = _inactivity(request.query.get("inactivity_timeout"))
    if chosen is None or inactivity is None:
        return error_response(400, "Unsupported output format or timeout.", "invalid_request")
    fault = context.fault(request.query.get("model_id", DEFAULT_MODEL), VENDOR)
    try:
        await apply_fault(fault, lambda f, status: _Refusal(status, f.message, f.code))
    except _Refusal as refusal:
        return error_response(refusal.status, refusal.message, refusal.code)
    keyed = bool(request.headers.get("xi-api-key", "").strip())
    settings = _Session(context.audio(), chosen[0], chosen[1], keyed, fault, inactivity)
    return SimUpgrade(partial(_converse, settings))


async def _converse(settings: _Session, socket: WebSocketConnection) -> None:
    """Read text until the end of input, speaking at each flush; errors close with 1008."""
    try:
        await _run(settings, socket)
    except _SessionError as error:
        body = {"message": error.message, "error": error.error, "code": POLICY_VIOLATION}
        await socket.send_message(json.dumps(body))
        await socket.aclose(POLICY_VIOLATION, error.message[:120])


async def _run(settings: _Session, socket: WebSocketConnection) -> None:
    first = await _next(settings, socket)
    if not settings.keyed and not str(first.get("xi_api_key") or "").strip():
        raise _SessionError("invalid_api_key", "No API key was given.")
    buffered = str(first.get("text") or "").strip()
    sent = 0
    while True:
        message = await _next(settings, socket)
        text = message.get("text")
        if not isinstance(text, str):
            raise _SessionError("invalid_message", "Every message needs a 'text' string.")
        if text == "":
            break
        buffered += text
        if message.get("flush") is True and buffered.strip():
            sent = await _speak(settings, socket, buffered.strip(), sent)
            buffered = ""
    if buffered.strip():
        await _speak(settings, socket, buffered.strip(), sent)
    await socket.send_message(json.dumps({"audio": None, "isFinal": True}))


async def _next(settings: _Session, socket: WebSocketConnection) -> dict[str, Any]:
    """The next client message as a JSON object; silence past the timeout ends it."""
    with trio.move_on_after(settings.inactivity_s):
        raw = settings.pending.popleft() if settings.pending else await socket.get_message()
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            raise _SessionError("invalid_message", "Messages are JSON objects.")
        return message
    seconds = round(settings.inactivity_s)
    raise _SessionError(
        "input_timeout_exceeded",
        f"Have not received new text for {seconds} seconds. Closing the connection.",
    )


async def _speak(settings: _Session, socket: WebSocketConnection, text: str, sent: int) -> int:
    """Send `text` as audio messages; returns how many audio messages the session has
    sent. Each message carries the alignment of the characters its audio speaks (the
    text spread evenly over the pieces, in order). A fault stalls (watching the client)
    or cuts after its chunk count."""
    data, seconds = await settings.audio.synthesise_timed(text, settings.fmt, settings.rate)
    parts = pieces(data)
    fault = settings.fault
    for index, piece in enumerate(parts):
        if fault is not None and fault.stop_after_chunks == sent:
            if not fault.stall_ms:
                raise StreamCut()
            with trio.move_on_after(fault.stall_ms / 1000):
                while True:  # reading, so the client leaving ends the stall at once
                    settings.pending.append(await socket.get_message())
        alignment = _alignment(text, seconds, index, len(parts))
        message = {
            "audio": base64.b64encode(piece).decode(),
            "isFinal": None,
            "normalizedAlignment": alignment,
            "alignment": alignment,
        }
        await socket.send_message(json.dumps(message))
        sent += 1
    return sent


def _alignment(text: str, seconds: float, index: int, count: int) -> dict[str, Any] | None:
    """The characters piece `index` of `count` speaks, with their times in the whole
    generation (None when the piece speaks none: more pieces than characters)."""
    start, end = len(text) * index // count, len(text) * (index + 1) // count
    if start == end:
        return None
    step = round(seconds * 1000 / max(1, len(text)))
    return {
        "chars": list(text[start:end]),
        "charStartTimesMs": [at * step for at in range(start, end)],
        "charsDurationsMs": [step] * (end - start),
    }


ROUTES: list[Route] = [
    Route("GET", "/v1/text-to-speech/{voice_id}/stream-input", stream_input),
]
