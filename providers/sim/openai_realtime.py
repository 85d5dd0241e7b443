"""OpenAI's Realtime API in the simulator: `GET /v1/realtime?model=` (a conversation) and
`GET /v1/realtime?intent=transcription` (a transcription session) upgraded to a WebSocket
(trio-websocket, see `providers.sim.websocket`), in the GA protocol.

What it speaks, as OpenAI documents it: `session.created` first, `session.update` ->
`session.updated` (`type`, `instructions`, `output_modalities`, `audio.input.format`
(PCM16 at 24 kHz), `audio.input.transcription`, `audio.input.turn_detection` (`server_vad`,
`semantic_vad` or null), `audio.output.voice`, `tools`, `tool_choice`,
`max_output_tokens`); `input_audio_buffer.append/commit/clear` with server VAD
(`speech_started`/`speech_stopped`, then `committed` and the user item); the input's
transcription (`conversation.item.input_audio_transcription.delta`/`.completed`) when
one is configured; `conversation.item.create/delete/retrieve/truncate`; `response.create`
and `response.cancel`, and barge-in (speech while a response runs cancels it,
`turn_detected`). Responses are `providers.sim.openai_realtime_answer`. Every server
event has an `event_id`; an error is an `error` event and the session goes on.

Deterministic like the rest of the simulator: what a committed turn "said" is the next
scripted transcript, else `heard` naming its length; a response is the next scripted
reply or prose, or a function call (`content.wants_tool_call`). VAD is the audio's
energy over 20 ms frames (`threshold` scales the level), which tells eSpeak NG's speech
from its silence exactly. Faults: a fault on the realtime model refuses or delays the
handshake; a fault on the transcription model applies to each commit's transcription
(a status: an `error` event; `stop_after_chunks`: the connection dropped after that
many deltas).
"""

from __future__ import annotations

import array
import base64
import binascii
import json
import math
import sys
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import attrs
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from providers.sim.audio import heard
from providers.sim.content import pace
from providers.sim.core import (
    Route,
    SimContext,
    SimRequest,
    SimResponse,
    SimUpgrade,
    StreamCut,
)
from providers.sim.faults import apply_fault
from providers.sim.openai import VENDOR, OpenAIError, check_auth, fault_error
from providers.sim.openai_realtime_answer import (
    Item,
    ResponseParams,
    Running,
    new_id,
    run_response,
    truncate_item,
)
from streams.writer import single_writer

RATE = 24_000
BYTES_PER_MS = RATE * 2 // 1000
FRAME_BYTES = 20 * BYTES_PER_MS
START_FRAMES = 2  # 40 ms of speech starts a turn
LEVEL = 1_000  # RMS that `threshold` 1.0 asks for
MIN_COMMIT_MS = 100
REALTIME_PREFIXES = ("gpt-realtime", "gpt-4o-realtime", "gpt-4o-mini-realtime")
TRANSCRIPT = "conversation.item.input_audio_transcription."
SERVER_VAD: Mapping[str, Any] = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
    "create_response": True,
    "interrupt_response": True,
}


class ClientError(Exception):
    """A client event refused with an `error` event (the session goes on)."""

    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.param = code, message, param


@attrs.define
class Vad:
    """Voice activity over 20 ms frames of 24 kHz PCM16: the audio's energy."""

    threshold: float
    end_frames: int
    speaking: bool = False
    run: int = 0
    rest: bytes = b""

    def feed(self, pcm: bytes) -> list[str]:
        data = self.rest + pcm
        whole = len(data) // FRAME_BYTES * FRAME_BYTES
        self.rest = data[whole:]
        signals = []
        for start in range(0, whole, FRAME_BYTES):
            signal = self._frame(_rms(data[start : start + FRAME_BYTES]) >= LEVEL * self.threshold)
            if signal is not None:
                signals.append(signal)
        return signals

    def _frame(self, voiced: bool) -> str | None:
        if voiced == self.speaking:
            self.run = 0
            return None
        self.run += 1
        if self.run < (self.end_frames if self.speaking else START_FRAMES):
            return None
        self.run, self.speaking = 0, voiced
        return "speech_started" if voiced else "speech_stopped"


def _rms(frame: bytes) -> float:
    """The root mean square of a frame of PCM16 little-endian samples."""
    samples = array.array("h", frame)
    if sys.byteorder == "big":
        samples.byteswap()
    return math.sqrt(sum(x * x for x in samples) / max(1, len(samples)))


@attrs.define
class Session:
    """One Realtime session of the simulator (see the module docstring)."""

    ctx: SimContext
    kind: str  # "realtime" or "transcription"
    model: str
    outbox: trio.MemorySendChannel[str] | None = None
    id: str = attrs.field(factory=lambda: new_id("sess"))
    instructions: str = ""
    modalities: list[str] = attrs.field(factory=lambda: ["audio"])
    voice: str = "marin"
    transcription: dict[str, Any] | None = None
    turn_detection: dict[str, Any] | None = attrs.field(factory=lambda: dict(SERVER_VAD))
    tools: list[Any] = attrs.field(factory=list)
    tool_choice: Any = "auto"
    max_output_tokens: int | str = "inf"
    items: list[Item] = attrs.field(factory=list)
    buffer: bytearray = attrs.field(factory=bytearray)
    received_ms: int = 0
    vad: Vad | None = None
    speech_item: str | None = None
    running: Running | None = None
    _events: int = 0

    async def emit(self, event: dict[str, Any]) -> None:
        assert self.outbox is not None
        self._events += 1
        await self.outbox.send(json.dumps({"event_id": f"event_{self._events:06d}"} | event))

    def body(self) -> dict[str, Any]:
        audio_input = {
            "format": {"type": "audio/pcm", "rate": RATE},
            "transcription": self.transcription,
            "noise_reduction": None,
            "turn_detection": self.turn_detection,
        }
        if self.kind == "transcription":
            audio = {"input": audio_input}
            return {"type": "transcription", "id": self.id, "audio": audio, "include": None}
        output = {"format": {"type": "audio/pcm", "rate": RATE}, "voice": self.voice, "speed": 1.0}
        return {
            "type": "realtime",
            "object": "realtime.session",
            "id": self.id,
            "model": self.model,
            "output_modalities": self.modalities,
            "instructions": self.instructions,
            "audio": {"input": audio_input, "output": output},
            "tools": self.tools,
            "tool_choice": self.tool_choice,
            "max_output_tokens": self.max_output_tokens,
            "tracing": None,
            "truncation": "auto",
            "prompt": None,
        }

    def item(self, item_id: Any) -> Item:
        found = next((item for item in self.items if item.id == item_id), None)
        if found is None:
            raise ClientError("item_not_found", f"Item with item_id not found: {item_id}")
        return found


async def realtime(request: SimRequest, ctx: SimContext) -> SimResponse | SimUpgrade:
    """The handshake: refuse with OpenAI's HTTP error, or accept with a session."""
    try:
        check_auth(request)
        kind, model = _kind_and_model(request.query)
        fault = ctx.fault(model, VENDOR) if kind == "realtime" else None
        await apply_fault(fault, lambda f, _: fault_error(f, model))
    except OpenAIError as error:
        return error.response()
    session = Session(ctx, kind, model)
    if kind == "transcription":
        session.modalities = ["text"]
    return SimUpgrade(partial(_serve, session))


def _kind_and_model(query: Mapping[str, str]) -> tuple[str, str]:
    if query.get("intent") == "transcription":
        return "transcription", query.get("model") or "gpt-4o-transcribe"
    model = query.get("model")
    if not model:
        raise OpenAIError(400, "Missing required parameter: 'model'.", param="model")
    if not model.startswith(REALTIME_PREFIXES):
        raise OpenAIError(404, f"The model `{model}` does not exist.", code="model_not_found")
    return "realtime", model


async def _serve(session: Session, socket: WebSocketConnection) -> None:
    """The session until the client leaves (a close is the end, not an error); a fault's
    cut comes out alone, for the server to drop the connection."""
    try:
        await _converse(session, socket)
    except BaseExceptionGroup as group:
        cut, rest = group.split(StreamCut)
        rest = rest.split(_LEFT)[1] if rest is not None else None
        if rest is not None:  # a cancellation (the server's), or a fault of ours
            raise rest from None
        if cut is not None:
            raise StreamCut("the transcription was cut") from None
    except _LEFT:
        pass


_LEFT = (ConnectionClosed, trio.BrokenResourceError)  # the client went away


async def _converse(session: Session, socket: WebSocketConnection) -> None:
    async with single_writer(socket.send_message) as session.outbox, trio.open_nursery() as tasks:
        session.vad = _vad(session.turn_detection)
        await session.emit({"type": "session.created", "session": session.body()})
        while True:
            raw = await socket.get_message()
            try:
                event = json.loads(raw)
                if not isinstance(event, dict) or event.get("type") not in HANDLERS:
                    raise ClientError("invalid_value", "Unknown or malformed client event.")
                await HANDLERS[event["type"]](session, tasks, event)
            except (ClientError, ValueError) as error:
                await _refuse(session, error, event if isinstance(event, dict) else {})


async def _refuse(session: Session, error: Exception, event: Mapping[str, Any]) -> None:
    code = error.code if isinstance(error, ClientError) else "invalid_json"
    param = error.param if isinstance(error, ClientError) else None
    body = {
        "type": "invalid_request_error",
        "code": code,
        "message": str(error),
        "param": param,
        "event_id": event.get("event_id"),
    }
    await session.emit({"type": "error", "error": body})


def _vad(turn_detection: Mapping[str, Any] | None) -> Vad | None:
    if not turn_detection:
        return None
    silence = turn_detection.get("silence_duration_ms") or 500
    if turn_detection.get("type") == "semantic_vad":
        silence = {"low": 800, "high": 300}.get(str(turn_detection.get("eagerness")), 500)
    threshold = float(turn_detection.get("threshold") or 0.5)
    return Vad(threshold, max(1, int(silence) // 20))


# -- session -------------------------------------------------------------------------------


async def _session_update(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    update = event.get("session")
    if not isinstance(update, dict):
        raise ClientError("invalid_value", "'session' must be an object.", "session")
    audio = update.get("audio") or {}
    audio_input, output = audio.get("input") or {}, audio.get("output") or {}
    fmt = audio_input.get("format")
    if fmt is not None and (fmt.get("type") != "audio/pcm" or fmt.get("rate", RATE) != RATE):
        raise ClientError("invalid_value", "The simulator takes audio/pcm at 24000 Hz.", "format")
    if "transcription" in audio_input:
        session.transcription = audio_input["transcription"]
    if "turn_detection" in audio_input:
        session.turn_detection = _turn_detection(audio_input["turn_detection"])
        session.vad = _vad(session.turn_detection)
    session.voice = _given(output, "voice", session.voice)
    session.instructions = _given(update, "instructions", session.instructions)
    session.modalities = _given(update, "output_modalities", session.modalities)
    session.tools = _given(update, "tools", session.tools)
    session.tool_choice = _given(update, "tool_choice", session.tool_choice)
    session.max_output_tokens = _given(update, "max_output_tokens", session.max_output_tokens)
    await session.emit({"type": "session.updated", "session": session.body()})


def _given(update: Mapping[str, Any], key: str, current: Any) -> Any:
    """An updated field; absent or null keeps what the session had (clients send null
    for what they leave to the server, as OpenAI accepts)."""
    value = update.get(key)
    return current if value is None else value


def _turn_detection(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ClientError("invalid_value", "'turn_detection' must be an object or null.")
    return dict(SERVER_VAD) | value


# -- input audio ---------------------------------------------------------------------------


async def _append(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    try:
        pcm = base64.b64decode(str(event.get("audio") or ""), validate=True)
    except (binascii.Error, ValueError):
        raise ClientError("invalid_value", "'audio' must be base64.", "audio") from None
    session.buffer += pcm
    session.received_ms += len(pcm) // BYTES_PER_MS
    vad = session.vad
    if vad is None:
        return
    if not vad.speaking:  # silence before a turn is kept only as its padding
        keep = (_padding_ms(session) + START_FRAMES * 20) * BYTES_PER_MS
        del session.buffer[: max(0, len(session.buffer) - keep)]
    for signal in vad.feed(pcm):
        if signal == "speech_started":
            await _speech_started(session)
        else:
            await _speech_stopped(session, tasks)


def _padding_ms(session: Session) -> int:
    return int((session.turn_detection or {}).get("prefix_padding_ms") or 300)


async def _speech_started(session: Session) -> None:
    session.speech_item = new_id("item")
    start = max(0, session.received_ms - START_FRAMES * 20)
    await session.emit(
        {
            "type": "input_audio_buffer.speech_started",
            "audio_start_ms": start,
            "item_id": session.speech_item,
        }
    )
    detection = session.turn_detection or {}
    if session.running is not None and detection.get("interrupt_response", True):
        session.running.cancel("turn_detected")


async def _speech_stopped(session: Session, tasks: trio.Nursery) -> None:
    detection = session.turn_detection or {}
    silence = int(detection.get("silence_duration_ms") or 500)
    await session.emit(
        {
            "type": "input_audio_buffer.speech_stopped",
            "audio_end_ms": max(0, session.received_ms - silence),
            "item_id": session.speech_item,
        }
    )
    if session.running is not None:
        await session.running.finished.wait()  # the interrupted answer closes first
    await _commit_turn(session, tasks)
    if session.kind == "realtime" and detection.get("create_response", True):
        _start(session, tasks, ResponseParams.of(session, None))


async def _commit(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    await _commit_turn(session, tasks)


async def _clear(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    session.buffer.clear()
    await session.emit({"type": "input_audio_buffer.cleared"})


async def _commit_turn(session: Session, tasks: trio.Nursery) -> None:
    held_ms = len(session.buffer) // BYTES_PER_MS
    if held_ms < MIN_COMMIT_MS:
        raise ClientError(
            "input_audio_buffer_commit_empty",
            f"Error committing input audio buffer: buffer too small. Expected at least "
            f"{MIN_COMMIT_MS}ms of audio, but buffer only has {held_ms}ms of audio.",
        )
    seconds = len(session.buffer) / 2 / RATE
    session.buffer.clear()
    text = session.ctx.next_transcript() or heard(seconds)
    item = Item(session.speech_item or new_id("item"), "message", role="user")
    item.heard, item.audio_s = text, seconds
    session.speech_item = None
    previous = session.items[-1].id if session.items else None
    session.items.append(item)
    await session.emit(
        {"type": "input_audio_buffer.committed", "previous_item_id": previous, "item_id": item.id}
    )
    for kind in ("conversation.item.added", "conversation.item.done"):
        await session.emit({"type": kind, "previous_item_id": previous, "item": item.body()})
    if session.transcription:
        tasks.start_soon(_transcribe, session, item)


async def _transcribe(session: Session, item: Item) -> None:
    """The turn's transcription events; a fault on the transcription model fails it."""
    assert session.transcription is not None
    model = str(session.transcription.get("model") or "whisper-1")
    base = {"item_id": item.id, "content_index": 0}
    fault = session.ctx.fault(model, VENDOR)
    try:
        await apply_fault(fault, lambda f, _: fault_error(f, model))
    except OpenAIError as error:
        await session.emit({"type": "error", "error": error.body["error"]})
        return
    words = [w if i == 0 else " " + w for i, w in enumerate(item.heard.split())]
    async for group in pace(words, 0, 0, fault):
        await session.emit(base | {"type": TRANSCRIPT + "delta", "delta": "".join(group)})
    usage = {"type": "duration", "seconds": round(item.audio_s, 3)}
    completed = {"type": TRANSCRIPT + "completed", "transcript": item.heard, "usage": usage}
    await session.emit(base | completed)


# -- conversation --------------------------------------------------------------------------


async def _item_create(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    raw = event.get("item")
    if not isinstance(raw, dict) or raw.get("type") not in ("message", "function_call_output"):
        raise ClientError("invalid_value", "'item' must be a message or a function output.")
    item = Item.from_client(raw)
    previous = session.items[-1].id if session.items else None
    session.items.append(item)
    for kind in ("conversation.item.added", "conversation.item.done"):
        await session.emit({"type": kind, "previous_item_id": previous, "item": item.body()})


async def _item_delete(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    session.items.remove(session.item(event.get("item_id")))
    await session.emit({"type": "conversation.item.deleted", "item_id": event.get("item_id")})


async def _item_retrieve(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    item = session.item(event.get("item_id"))
    await session.emit({"type": "conversation.item.retrieved", "item": item.body()})


async def _item_truncate(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    item = session.item(event.get("item_id"))
    end_ms = event.get("audio_end_ms")
    if not isinstance(end_ms, int) or end_ms < 0:
        raise ClientError("invalid_value", "'audio_end_ms' must be an integer.", "audio_end_ms")
    running = session.running
    if running is not None and running.message is item:
        running.cancel("client_cancelled")
        await running.finished.wait()
    truncate_item(item, end_ms)
    await session.emit(
        {
            "type": "conversation.item.truncated",
            "item_id": item.id,
            "content_index": event.get("content_index", 0),
            "audio_end_ms": end_ms,
        }
    )


# -- responses -----------------------------------------------------------------------------


async def _response_create(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    if session.kind != "realtime":
        raise ClientError("invalid_value", "A transcription session gives no responses.")
    if session.running is not None:
        raise ClientError(
            "conversation_already_has_active_response",
            "Conversation already has an active response in progress.",
        )
    _start(session, tasks, ResponseParams.of(session, event.get("response")))


async def _response_cancel(session: Session, tasks: trio.Nursery, event: dict[str, Any]) -> None:
    if session.running is None:
        raise ClientError(
            "response_cancel_not_active", "Cancellation failed: no active response found."
        )
    session.running.cancel("client_cancelled")


def _start(session: Session, tasks: trio.Nursery, params: ResponseParams) -> None:
    running = Running(new_id("resp"), params)
    session.running = running

    def ended() -> None:
        running.finished.set()
        if session.running is running:
            session.running = None

    running.ended = ended

    async def respond() -> None:
        try:
            await run_response(session.emit, session.items, session.ctx, running)
        finally:
            ended()

    tasks.start_soon(respond)


Handler = Callable[[Session, trio.Nursery, dict[str, Any]], Awaitable[None]]
HANDLERS: Mapping[str, Handler] = {
    "session.update": _session_update,
    "input_audio_buffer.append": _append,
    "input_audio_buffer.commit": _commit,
    "input_audio_buffer.clear": _clear,
    "conversation.item.create": _item_create,
    "conversation.item.delete": _item_delete,
    "conversation.item.retrieve": _item_retrieve,
    "conversation.item.truncate": _item_truncate,
    "response.create": _response_create,
    "response.cancel": _response_cancel,
}

ROUTES: list[Route] = [Route("GET", "/v1/realtime", realtime)]
