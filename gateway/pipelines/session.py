"""A live voice session over a WebSocket: the client streams PCM16 audio, the gateway
answers each turn with events and audio, and user speech during an answer cancels it.

The protocol (JSON text messages, modelled on the common realtime voice protocols; see
README "Voice sessions"):

client -> gateway
    session.update            {session: {template?, context?, vad?}}  (from the next turn)
    input_audio_buffer.append {audio: base64 PCM16 mono 16 kHz}
    input_audio_buffer.commit   end the turn now (without VAD, the only way)
    input_audio_buffer.clear    drop the buffered audio
    response.cancel             stop the answer being given

gateway -> client
    session.created / session.updated {session}
    input_audio_buffer.speech_started / speech_stopped / committed
    transcription.partial / transcription.final {text}
    response.created {response_id}
    response.text.delta {response_id, delta}
    response.audio.delta {response_id, delta: base64 PCM16 mono 24 kHz}
    response.done {response_id, status: completed|cancelled|failed, usage?, latency?}
    error {error: {message, code}}

Ownership: the session's nursery (opened by `run_session`, itself inside the request's
task) holds the reader loop and at most one answer at a time, each answer in its own
cancel scope. A barge-in (VAD hears speech while an answer runs) or `response.cancel`
cancels that scope: every stage of the pipeline stops and every upstream closes before
`response.done` (status `cancelled`) is sent. A dropped socket ends the reader, which
cancels the nursery, which ends everything. The conversation history keeps the user's
transcript and, of the answer, only the sentences whose audio was all sent to the client.
"""

from __future__ import annotations

import base64
import binascii
import io
import uuid
import wave
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import attrs
import orjson
import trio

from gateway.pipelines.flow import EVENT_BUFFER, Event, Stages, Trace, run_pipeline
from gateway.pipelines.vad import RATE, Classifier, TurnDetector
from gateway.platform.errors import ApiError
from providers.audio_types import AudioClip
from streams.writer import single_writer

MAX_TURN_BYTES = RATE * 2 * 120  # two minutes of speech in one turn at most
MAX_MESSAGE_CHARS = 1024 * 1024  # one append message (base64)
MAX_HISTORY = 40  # messages kept for the model (20 turns)
Turn = Callable[[AudioClip, Sequence[Mapping[str, str]]], AbstractAsyncContextManager[Stages]]


@attrs.frozen
class Configured:
    """What a session's template gives it: how a turn runs and whether it speaks."""

    template_id: str
    turn: Turn
    speak: bool


# Resolves (template id or name, context) for `session.update`; raises `ApiError` (an
# unknown template is a 404) and then the session keeps the template it had.
Retemplate = Callable[[str, str | None], Awaitable[Configured]]


class Socket(Protocol):
    """What the session needs of a WebSocket (Quart's, or a test's)."""

    async def receive(self) -> str | bytes: ...

    async def send(self, data: str) -> None: ...


class SessionClosed(Exception):
    """The client closed the socket."""


@attrs.define
class _Answer:
    id: str
    scope: trio.CancelScope
    started: float
    cancel_requested: float | None = None


class Session:
    """One connected client's session (see the module docstring)."""

    def __init__(
        self,
        socket: Socket,
        turn: Turn,
        *,
        classifier: Classifier | None,
        speak: bool = True,
        settings: Mapping[str, Any] | None = None,
        retemplate: Retemplate | None = None,
        context: str | None = None,
    ) -> None:
        self._socket, self._turn, self._speak = socket, turn, speak
        self._retemplate, self._context = retemplate, context
        self._classifier = classifier
        self._detector = TurnDetector(classifier) if classifier is not None else None
        self._settings: dict[str, Any] = dict(settings or {}) | {"vad": classifier is not None}
        self._buffer = bytearray()
        self._history: list[dict[str, str]] = []
        self._answer: _Answer | None = None
        self._outbox: trio.MemorySendChannel[str] | None = None  # to the socket's writer
        self.cancel_latencies: list[float] = []  # barge-in: speech heard -> upstreams closed

    @property
    def history(self) -> list[dict[str, str]]:
        return list(self._history)

    async def run(self) -> None:
        """Serve until the client leaves; cancellation ends every answer with it.

        The socket has one writer (`streams.writer`) outside every answer's cancel
        scope: cancelling an answer never cuts a message halfway."""
        async with (
            single_writer(self._socket.send) as self._outbox,
            trio.open_nursery() as nursery,
        ):
            await self.send({"type": "session.created", "session": self._settings})
            try:
                await self._read(nursery)
            finally:
                nursery.cancel_scope.cancel()

    async def send(self, message: Mapping[str, Any]) -> None:
        """Queue one event for the socket's writer (a cancelled call queued nothing)."""
        assert self._outbox is not None, "the session is not running"
        await self._outbox.send(orjson.dumps(message).decode())

    async def _read(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                raw = await self._socket.receive()
            except SessionClosed:
                return
            try:
                await self._handle(nursery, _message(raw))
            except ApiError as error:
                await self.send(
                    {"type": "error", "error": {"message": error.message, "code": error.code}}
                )

    async def _handle(self, nursery: trio.Nursery, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "input_audio_buffer.append":
            await self._append(nursery, _audio(message))
        elif kind == "input_audio_buffer.commit":
            await self._commit(nursery)
        elif kind == "input_audio_buffer.clear":
            self._buffer.clear()
        elif kind == "response.cancel":
            self._cancel_answer()
        elif kind == "session.update":
            await self._update(message.get("session"))
            await self.send({"type": "session.updated", "session": self._settings})
        else:
            raise ApiError(400, "invalid_event", f"Unknown event type {kind!r}.")

    async def _update(self, session: Any) -> None:
        """Apply a `session.update`: every field is checked (and a new template resolved)
        before any changes, so a refused update changes nothing. A new template or
        context applies from the next turn; an answer being given finishes as it began."""
        if not isinstance(session, dict):
            raise ApiError(400, "invalid_event", "'session' must be an object.")
        vad = session.get("vad", self._detector is not None)
        if not isinstance(vad, bool):
            raise ApiError(400, "invalid_event", "'session.vad' must be a boolean.")
        configured = await self._configured(session)
        if configured is not None:
            self._turn, self._speak = configured.turn, configured.speak
            self._settings["template"] = configured.template_id
            self._context = session.get("context", self._context)
        if "vad" in session:
            wants = vad and self._classifier is not None
            self._detector = TurnDetector(self._classifier) if wants and self._classifier else None
            self._settings["vad"] = self._detector is not None

    async def _configured(self, session: Mapping[str, Any]) -> Configured | None:
        """The session's new template, when the update names one or a new context."""
        if "template" not in session and "context" not in session:
            return None
        template = session.get("template", self._settings.get("template"))
        context = session.get("context", self._context)
        if not isinstance(template, str) or not template:
            raise ApiError(400, "invalid_event", "'session.template' must be a template id.")
        if context is not None and not isinstance(context, str):
            raise ApiError(400, "invalid_event", "'session.context' must be a string.")
        if self._retemplate is None:
            raise ApiError(400, "invalid_event", "This session's template is fixed.")
        return await self._retemplate(template, context)

    async def _append(self, nursery: trio.Nursery, pcm: bytes) -> None:
        if len(self._buffer) + len(pcm) > MAX_TURN_BYTES:
            raise ApiError(413, "turn_too_long", "A turn holds at most two minutes of audio.")
        self._buffer += pcm
        if self._detector is None:
            return
        for signal in self._detector.feed(pcm):
            await self.send({"type": f"input_audio_buffer.{signal}"})
            if signal == "speech_started":
                self._barge_in()
            else:
                await self._commit(nursery)

    def _barge_in(self) -> None:
        """The user speaks: an answer being given stops now (its audio is cut)."""
        self._cancel_answer()

    def _cancel_answer(self) -> None:
        if self._answer is not None and self._answer.cancel_requested is None:
            self._answer.cancel_requested = trio.current_time()
            self._answer.scope.cancel()

    async def _commit(self, nursery: trio.Nursery) -> None:
        if not self._buffer:
            return
        clip = _clip(bytes(self._buffer))
        self._buffer.clear()
        await self.send({"type": "input_audio_buffer.committed"})
        self._cancel_answer()
        answer = _Answer(str(uuid.uuid4()), trio.CancelScope(), trio.current_time())
        await nursery.start(self._respond, clip, answer)

    async def _respond(
        self, clip: AudioClip, answer: _Answer, task_status: trio.TaskStatus[None]
    ) -> None:
        previous, self._answer = self._answer, answer
        task_status.started()
        del previous  # its scope is cancelled; its task ends on its own
        trace = Trace(started=trio.current_time())
        sent: list[str] = []
        status = "completed"
        done: Event = {}
        await self.send({"type": "response.created", "response_id": answer.id})
        with answer.scope:
            async with self._turn(clip, self.history) as stages:
                done = await self._relay(stages, trace, sent, answer.id)
            if done.get("type") == "error":
                status = "failed"
        if answer.scope.cancelled_caught:
            status = "cancelled"
            if answer.cancel_requested is not None:
                self.cancel_latencies.append(trio.current_time() - answer.cancel_requested)
        self._remember(trace, sent, completed=status == "completed")
        if self._answer is answer:
            self._answer = None
        extra = {k: done[k] for k in ("usage", "latency") if k in done}
        await self.send(
            {"type": "response.done", "response_id": answer.id, "status": status} | extra
        )

    async def _relay(self, stages: Stages, trace: Trace, sent: list[str], answer_id: str) -> Event:
        """Run the pipeline and forward its events; returns its last (done or error)."""
        send, receive = trio.open_memory_channel[Event](EVENT_BUFFER)
        last: Event = {}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._pipeline, stages, send, trace)
            async with receive:
                async for event in receive:
                    last = event
                    await self._forward(event, sent, answer_id)
        return last

    async def _pipeline(
        self, stages: Stages, send: trio.MemorySendChannel[Event], trace: Trace
    ) -> None:
        await run_pipeline(stages, send, speak=self._speak, trace=trace, mark_sentences=True)

    async def _forward(self, event: Event, sent: list[str], answer_id: str) -> None:
        kind = event["type"]
        if kind in ("transcription.partial", "transcription.final"):
            await self.send(event)
        elif kind == "llm.token":
            await self.send(
                {"type": "response.text.delta", "response_id": answer_id, "delta": event["token"]}
            )
        elif kind == "audio.chunk":
            data = base64.b64encode(event["data"]).decode()
            await self.send(
                {"type": "response.audio.delta", "response_id": answer_id, "delta": data}
            )
        elif kind == "audio.sentence":
            sent.append(event["text"])  # all of its audio has gone out on the socket
        elif kind == "error":
            error = {
                "message": event["message"],
                "code": "stage_failed",
                "recoverable": event["recoverable"],
            }
            await self.send({"type": "error", "error": error, "response_id": answer_id})

    def _remember(self, trace: Trace, sent: list[str], *, completed: bool) -> None:
        if not trace.transcript:
            return
        said = (trace.response if completed or not self._speak else " ".join(sent)).strip()
        self._history.append({"role": "user", "content": trace.transcript})
        if said:
            self._history.append({"role": "assistant", "content": said})
        del self._history[:-MAX_HISTORY]


def _message(raw: str | bytes) -> dict[str, Any]:
    if isinstance(raw, bytes) or len(raw) > MAX_MESSAGE_CHARS:
        raise ApiError(400, "invalid_event", "Events are JSON text messages of at most 1 MB.")
    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ApiError(400, "invalid_event", "An event is not JSON.") from None
    if not isinstance(message, dict):
        raise ApiError(400, "invalid_event", "An event is a JSON object with a 'type'.")
    return message


def _audio(message: Mapping[str, Any]) -> bytes:
    audio = message.get("audio")
    try:
        pcm = base64.b64decode(audio, validate=True) if isinstance(audio, str) else None
    except (binascii.Error, ValueError):
        pcm = None
    if not pcm or len(pcm) % 2:
        raise ApiError(400, "invalid_audio", "'audio' must be base64 PCM16 (whole samples).")
    return pcm


def _clip(pcm: bytes) -> AudioClip:
    """A turn's audio as the WAV file recognition takes."""
    sink = io.BytesIO()
    with wave.open(sink, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(pcm)
    return AudioClip(sink.getvalue(), "wav", len(pcm) / 2 / RATE, "turn.wav")
