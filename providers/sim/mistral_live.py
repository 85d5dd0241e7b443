"""Mistral's realtime transcription (Voxtral Realtime) in the simulator:
`GET /v1/audio/transcriptions/realtime?model=voxtral-mini-transcribe-realtime-2602`
upgraded to a WebSocket (see `providers.mistral_live` for the protocol).

The session opens with `session.created`; `session.update` sets the audio format
(`pcm_s16le` at one of the vendor's rates) and is answered `session.updated`;
`input_audio.append` brings audio; `input_audio.end` ends it, and the session answers
`transcription.done` and closes. Like the vendor's model it recognises while the audio
comes: the words of the text go out as `transcription.text.delta` one per `WORD_MS` of
audio received, the rest at the end. The text is the next scripted transcript (taken at
the first audio), else `heard` naming the audio's length (known only at the end).
Handshake refusals are the HTTP API's answers (no key, a batch model, a fault's status);
a fault's `stop_after_chunks` drops the connection after that many deltas.
"""

from __future__ import annotations

import base64
import binascii
import json
from functools import partial
from typing import Any

import attrs
from trio_websocket import WebSocketConnection

from providers.sim.audio import heard
from providers.sim.core import (
    Fault,
    Route,
    SimContext,
    SimRequest,
    SimResponse,
    SimUpgrade,
    StreamCut,
)
from providers.sim.faults import apply_fault
from providers.sim.mistral import VENDOR, MistralError, api_error, check_auth, fault_error

WORD_MS = 300  # audio the simulated model needs per word it recognises
RATES = frozenset({8_000, 16_000, 22_050, 44_100, 48_000})


@attrs.define
class _Live:
    ctx: SimContext
    model: str
    fault: Fault | None
    rate: int = 16_000
    received: int = 0  # bytes of audio
    words: list[str] | None = None  # the scripted text's words, once audio came
    sent: int = 0  # words sent

    @property
    def seconds(self) -> float:
        return self.received / 2 / self.rate


async def realtime(request: SimRequest, ctx: SimContext) -> SimResponse | SimUpgrade:
    try:
        check_auth(request)
        model = request.query.get("model", "")
        if "realtime" not in model:
            raise api_error(400, f"Invalid model: {model} does not support realtime")
        fault = ctx.fault(model, VENDOR)
        await apply_fault(fault, lambda f, _: fault_error(f))
    except MistralError as error:
        return error.response()
    return SimUpgrade(partial(_serve, _Live(ctx, model, fault)))


async def _serve(live: _Live, socket: WebSocketConnection) -> None:
    await _send(socket, {"type": "session.created", "session": _session(live)})
    while True:
        message = json.loads(await socket.get_message())
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "session.update":
            await _update(live, socket, message.get("session") or {})
        elif kind == "input_audio.append":
            await _append(live, socket, message)
        elif kind == "input_audio.end":
            await _done(live, socket)
            return
        elif kind != "input_audio.flush":
            await _error(socket, 400, f"Unknown message type: {kind}")


def _session(live: _Live) -> dict[str, Any]:
    audio = {"encoding": "pcm_s16le", "sample_rate": live.rate}
    return {"request_id": "req_sim", "model": live.model, "audio_format": audio}


async def _update(live: _Live, socket: WebSocketConnection, session: dict[str, Any]) -> None:
    fmt = session.get("audio_format") or {}
    rate = fmt.get("sample_rate", live.rate)
    if fmt.get("encoding", "pcm_s16le") != "pcm_s16le" or rate not in RATES:
        await _error(socket, 400, "Unsupported audio format")
        return
    live.rate = rate
    await _send(socket, {"type": "session.updated", "session": _session(live)})


async def _append(live: _Live, socket: WebSocketConnection, message: dict[str, Any]) -> None:
    try:
        pcm = base64.b64decode(str(message.get("audio") or ""), validate=True)
    except (binascii.Error, ValueError):
        await _error(socket, 400, "audio must be base64")
        return
    if live.words is None:
        scripted = live.ctx.next_transcript()
        live.words = scripted.split() if scripted else []
    live.received += len(pcm)
    due = min(len(live.words), int(live.seconds * 1000 // WORD_MS))
    while live.sent < due:
        await _word(live, socket, live.words)


async def _done(live: _Live, socket: WebSocketConnection) -> None:
    words = live.words or heard(live.seconds).split()
    while live.sent < len(words):
        await _word(live, socket, words)
    done = {
        "type": "transcription.done",
        "model": live.model,
        "text": " ".join(words),
        "language": "en",
        "segments": [],
        "usage": {"prompt_audio_seconds": max(1, round(live.seconds))},
    }
    await _send(socket, done)


async def _word(live: _Live, socket: WebSocketConnection, words: list[str]) -> None:
    fault = live.fault
    if fault is not None and fault.stop_after_chunks == live.sent:
        raise StreamCut()
    text = words[live.sent] if live.sent == 0 else " " + words[live.sent]
    live.sent += 1
    await _send(socket, {"type": "transcription.text.delta", "text": text})


async def _error(socket: WebSocketConnection, code: int, message: str) -> None:
    await _send(socket, {"type": "error", "error": {"message": message, "code": code}})


async def _send(socket: WebSocketConnection, event: dict[str, Any]) -> None:
    await socket.send_message(json.dumps(event))


ROUTES: list[Route] = [
    Route("GET", "/v1/audio/transcriptions/realtime", realtime),
]
