"""A Realtime session: the OpenAI Realtime protocol over a WebSocket, answered by a cascade.

Ownership: `run` owns the socket's one writer (`streams.writer`: no send is ever cut
halfway, whatever is cancelled) and the session's nursery, which holds the reader loop,
the input transcriptions and at most one response (`answer.run_response`) in its own
cancel scope. Barge-in (VAD hears speech while a response runs), `response.cancel` and
a truncate of the item being spoken cancel that scope: the model and every synthesis
stop and their upstreams close before `response.done` (status `cancelled`) goes out. A
dropped socket ends the reader, which cancels the nursery, which ends everything.

What each client event does is `HANDLERS`; whether it may happen now, the tables of
`states`. A refused event is answered by an `error` event naming its `event_id`, and the
session goes on.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import attrs
import trio

from gateway.kernels.voice.session import KEEP, Cascade, Replan, Retemplate
from gateway.kernels.voice.vad import FRAME_MS, START_FRAMES, Classifier, TurnDetector
from gateway.platform.errors import ApiError, from_provider_error
from gateway.realtime.answer import (
    AnswerContext,
    ResponseOptions,
    Running,
    response_options,
    run_response,
)
from gateway.realtime.audio import WORK_RATE, AudioFormatError, InputAudio, OutputAudio
from gateway.realtime.config import SessionConfig, TurnDetection, apply_update, render_session
from gateway.realtime.conversation import Conversation, Item, item_from_client, truncated
from gateway.realtime.events import RealtimeError, Wire, client_event_id, new_id
from gateway.realtime.states import SessionState, next_state
from providers.audio_types import TranscriptDelta, TranscriptDone
from providers.errors import ProviderError
from streams.tape import Tape
from streams.writer import single_writer

MIN_COMMIT_MS = 100  # what OpenAI's commit asks at least
MAX_BUFFER_S = 300  # five minutes of audio in one turn at most
BYTES_PER_MS = WORK_RATE * 2 // 1000

ClassifierFor = Callable[[TurnDetection], Classifier]


class Socket(Protocol):
    """What the session needs of a WebSocket (Quart's, or a test's)."""

    async def receive(self) -> str | bytes: ...

    async def send(self, data: str) -> None: ...


class SessionClosed(Exception):
    """The client closed the socket."""


@attrs.define
class _Live:
    """A turn being recognised while it is spoken: its recording, the item it will be,
    the task's scope (clear and the session's end cancel it) and its end."""

    tape: Tape
    item_id: str
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    done: trio.Event = attrs.field(factory=trio.Event)
    item: Item | None = None  # the committed turn, once it is


@attrs.define
class _Input:
    """The input audio buffer at `WORK_RATE`, and where it is in the session's audio."""

    decoder: InputAudio
    detector: TurnDetector | None
    pcm: bytearray = attrs.field(factory=bytearray)
    received_ms: int = 0  # all the audio the session was sent
    item_id: str | None = None  # the item the speech being heard will become
    padding_ms: int = 300
    live: _Live | None = None  # the turn's recognition, from its first sample

    def append(self, pcm: bytes) -> None:
        self.pcm += pcm
        self.received_ms += len(pcm) // BYTES_PER_MS
        if self.detector is not None and not self.detector.speaking:
            keep = (self.padding_ms + START_FRAMES * FRAME_MS) * BYTES_PER_MS
            del self.pcm[: max(0, len(self.pcm) - keep)]  # silence before a turn goes


class RealtimeSession:
    """One client's Realtime session (see the module docstring)."""

    def __init__(
        self,
        socket: Socket,
        wire: Wire,
        config: SessionConfig,
        cascade: Cascade,
        replan: Replan,
        *,
        classifier_for: ClassifierFor,
        lead_s: float,
        respond_on_commit: bool = False,
        retemplate: Retemplate | None = None,
    ) -> None:
        self._socket, self._wire = socket, wire
        self._respond_on_commit, self._retemplate_to = respond_on_commit, retemplate
        self._config, self._cascade, self._replan = config, cascade, replan
        self._classifier_for, self._lead_s = classifier_for, lead_s
        self.id = new_id("sess")
        self._input = _Input(InputAudio(config.input_format), self._detector(config))
        self._output = OutputAudio(config.output_format)
        self._conversation = Conversation()
        self._state: SessionState = "idle"
        self._running: Running | None = None
        self._transcribing: list[trio.Event] = []
        self._vad_stopped: float | None = None
        self._outbox: trio.MemorySendChannel[str] | None = None
        self.cancel_latencies: list[float] = []  # cancel asked -> response.done queued

    async def run(self) -> None:
        """Serve until the client leaves; cancellation ends every answer with it."""
        async with (
            single_writer(self._socket.send) as self._outbox,
            trio.open_nursery() as nursery,
        ):
            await self.emit({"type": self._created(), "session": self._session_body()})
            try:
                await self._read(nursery)
            finally:
                nursery.cancel_scope.cancel()

    async def emit(self, event: Mapping[str, Any]) -> None:
        """Queue one server event for the socket's writer (a cancelled call queued
        nothing)."""
        assert self._outbox is not None, "the session is not running"
        data = self._wire.render(event)
        if data is not None:
            await self._outbox.send(data.decode())

    async def _read(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                raw = await self._socket.receive()
            except SessionClosed:
                return
            event: dict[str, Any] = {}
            try:
                event = self._wire.client_event(raw)
                await HANDLERS[event["type"]](self, nursery, event)
            except RealtimeError as error:
                await self.emit({"type": "error", "error": error.body(client_event_id(event))})

    # -- session ---------------------------------------------------------------------------

    async def _session_update(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        session = event.get("session")
        if event["type"] == "transcription_session.update" and isinstance(session, dict):
            session = {"type": "transcription"} | session
        config = apply_update(self._config, session)
        cascade = self._cascade
        if _replanned(self._config, config):
            try:
                cascade = await self._replan(config)
            except ApiError as error:
                raise RealtimeError(error.code, error.message, param="session") from None
        self._apply(config, cascade)
        transcription = "transcription_session" in event["type"]
        kind = "transcription_session.updated" if transcription else "session.updated"
        await self.emit({"type": kind, "session": self._session_body()})

    async def _legacy_update(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        """`/v1/audio/sessions`' `session.update` (see `legacy`): a template and context
        from the next turn, VAD on or off, the input format; all or nothing."""
        update, config, cascade = event["session"], self._config, self._cascade
        if "format" in update:
            config = apply_update(config, {"audio": {"input": {"format": update["format"]}}})
        if "vad" in update:
            config = attrs.evolve(config, turn_detection=TurnDetection() if update["vad"] else None)
        if "stt_prompt" in update and config.transcription is not None:
            heard = attrs.evolve(config.transcription, prompt=update["stt_prompt"])
            config = attrs.evolve(config, transcription=heard)
        if "template" in update or "stt_prompt" in update:  # the stages planned again
            if self._retemplate_to is None:
                raise RealtimeError("invalid_event", "This session's template is fixed.")
            try:
                cascade, config = await self._retemplate_to(
                    update.get("template"), update.get("context", KEEP), config
                )
            except ApiError as error:
                raise RealtimeError(error.code, error.message) from None
        self._apply(config, cascade)
        await self.emit({"type": "session.updated", "session": self._session_body()})

    def _apply(self, config: SessionConfig, cascade: Cascade) -> None:
        if config.input_format != self._config.input_format:
            self._input.decoder = InputAudio(config.input_format)
        if config.output_format != self._config.output_format:
            self._output = OutputAudio(config.output_format)
        if config.turn_detection != self._config.turn_detection:
            self._input.detector = self._detector(config)
        self._config, self._cascade = config, cascade

    def _session_body(self) -> dict[str, Any]:
        return render_session(self._config, self.id)

    def _created(self) -> str:
        beta = getattr(self._wire, "beta", False)
        beta_transcription = beta and self._config.kind == "transcription"
        return "transcription_session.created" if beta_transcription else "session.created"

    def _detector(self, config: SessionConfig) -> TurnDetector | None:
        vad = config.turn_detection
        if vad is None:
            return None
        frames = max(1, vad.end_silence_ms // FRAME_MS)
        return TurnDetector(self._classifier_for(vad), end_frames=frames)

    # -- input audio -----------------------------------------------------------------------

    async def _append(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        audio = event.get("audio")
        try:
            data = base64.b64decode(audio, validate=True) if isinstance(audio, str) else b""
            pcm = self._input.decoder.decode(data)
        except (binascii.Error, ValueError, AudioFormatError):
            raise RealtimeError(
                "invalid_value",
                "'audio' must be base64 audio in the session's input format.",
                param="audio",
            ) from None
        if len(self._input.pcm) + len(pcm) > MAX_BUFFER_S * 1000 * BYTES_PER_MS:
            raise RealtimeError(
                "input_audio_buffer_too_large", "A turn holds at most five minutes of audio."
            )
        self._input.append(pcm)
        if self._input.live is not None:
            self._input.live.tape.append(pcm)
        detector = self._input.detector
        if detector is None:
            if self._input.live is None:  # push-to-talk: the turn starts with its audio
                self._input.item_id = new_id("item")
                self._listen(nursery)
            return
        for signal in detector.feed(pcm):
            if signal == "speech_started":
                await self._speech_started(nursery)
            else:
                await self._speech_stopped(nursery)

    def _listen(self, nursery: trio.Nursery) -> None:
        """Start recognising the turn now beginning, from the audio held for it."""
        self._forget_live()
        assert self._input.item_id is not None
        tape = Tape()
        tape.append(bytes(self._input.pcm))
        live = _Live(tape, self._input.item_id)
        self._input.live = live
        nursery.start_soon(self._transcribe_live, live)

    def _forget_live(self) -> None:
        """The turn being recognised is dropped (cleared, or a new one began)."""
        live, self._input.live = self._input.live, None
        if live is not None:
            live.scope.cancel()

    async def _speech_started(self, nursery: trio.Nursery) -> None:
        self._input.item_id = new_id("item")
        self._listen(nursery)
        start = max(0, self._input.received_ms - START_FRAMES * FRAME_MS)
        await self.emit(
            {
                "type": "input_audio_buffer.speech_started",
                "audio_start_ms": start,
                "item_id": self._input.item_id,
            }
        )
        vad = self._config.turn_detection
        if self._running is not None and vad is not None and vad.interrupt_response:
            self._state = next_state(self._state, "barge_in")
            self._running.cancel("turn_detected")

    async def _speech_stopped(self, nursery: trio.Nursery) -> None:
        vad = self._config.turn_detection
        self._vad_stopped = trio.current_time()
        end = self._input.received_ms - (vad.end_silence_ms if vad else 0)
        await self.emit(
            {
                "type": "input_audio_buffer.speech_stopped",
                "audio_end_ms": max(0, end),
                "item_id": self._input.item_id,
            }
        )
        running = self._running
        if running is not None and running.cancel_requested is not None:
            await running.finished.wait()  # the answer this turn interrupted closes first
        respond = vad is not None and vad.create_response and self._config.kind == "realtime"
        await self._commit_buffer(nursery, respond=respond and self._running is None)

    async def _commit(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        respond = self._respond_on_commit and self._config.kind == "realtime"
        await self._commit_buffer(nursery, respond=respond)

    async def _clear(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        self._input.pcm.clear()
        self._forget_live()
        await self.emit({"type": "input_audio_buffer.cleared"})

    async def _commit_buffer(self, nursery: trio.Nursery, *, respond: bool) -> None:
        held_ms = len(self._input.pcm) // BYTES_PER_MS
        if held_ms < MIN_COMMIT_MS:
            raise RealtimeError(
                "input_audio_buffer_commit_empty",
                f"Error committing input audio buffer: buffer too small. Expected at least "
                f"{MIN_COMMIT_MS}ms of audio, but buffer only has {held_ms}ms of audio.",
            )
        pcm = bytes(self._input.pcm)
        self._input.pcm.clear()
        item = Item(self._input.item_id or new_id("item"), "message", role="user", audio=True)
        self._input.item_id = None
        previous = self._conversation.add(item)
        await self.emit(
            {
                "type": "input_audio_buffer.committed",
                "previous_item_id": previous,
                "item_id": item.id,
            }
        )
        await self.emit(
            {"type": "conversation.item.added", "previous_item_id": previous, "item": item.body()}
        )
        await self.emit(
            {"type": "conversation.item.done", "previous_item_id": previous, "item": item.body()}
        )
        live, self._input.live = self._input.live, None
        if live is None or live.item_id != item.id:  # no recognition runs for this turn
            if live is not None:
                live.scope.cancel()
            live = _Live(_recorded(pcm), item.id)
            nursery.start_soon(self._transcribe_live, live)
        live.item = item
        live.tape.close()
        self._transcribing.append(live.done)
        if respond:
            running = self._running
            if running is not None:  # a new turn replaces the answer being given
                running.cancel("turn_detected")
                await running.finished.wait()
            await self._start(nursery, ResponseOptions(self._config))

    async def _transcribe_live(self, live: _Live) -> None:
        """Recognise a turn while it is spoken (its own task: a barge-in does not lose
        it): partials as they come, the transcript once the turn is committed; the
        response that follows waits for it. Cancelled by a clear or the session's end."""
        base = {"item_id": live.item_id, "content_index": 0}
        try:
            with live.scope:
                async with self._cascade.transcribe_live(live.tape) as opened:
                    async for event in opened.items:
                        if isinstance(event, TranscriptDelta) and event.text:
                            delta = {"type": _TRANSCRIPT + "delta", "delta": event.text}
                            await self.emit(base | delta)
                        elif isinstance(event, TranscriptDone):
                            await self._transcribed_turn(live, event.result.text.strip())
                            return
        except (ApiError, ProviderError) as exc:
            failure = from_provider_error(exc) if isinstance(exc, ProviderError) else exc
            error = {"type": failure.type, "code": failure.code, "message": failure.message}
            await self.emit(base | {"type": _TRANSCRIPT + "failed", "error": error})
        finally:
            live.done.set()

    async def _transcribed_turn(self, live: _Live, text: str) -> None:
        assert live.item is not None, "a final transcript comes after the commit"
        live.item.text = text
        seconds = len(live.tape) / 2 / WORK_RATE
        usage = {"type": "duration", "seconds": round(seconds, 3)}
        completed = {"type": _TRANSCRIPT + "completed", "transcript": text, "usage": usage}
        await self.emit({"item_id": live.item_id, "content_index": 0} | completed)

    async def _transcribed(self) -> float | None:
        """Wait for the turns being recognised; when the last one finished."""
        if not self._transcribing:
            return None
        for done in list(self._transcribing):
            await done.wait()
        self._transcribing = [d for d in self._transcribing if not d.is_set()]
        return trio.current_time()

    # -- conversation ----------------------------------------------------------------------

    async def _item_create(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        item = item_from_client(event.get("item"))
        previous_id = event.get("previous_item_id")
        previous = self._conversation.add(
            item, previous_id if isinstance(previous_id, str) else None
        )
        for kind in ("conversation.item.added", "conversation.item.done"):
            await self.emit({"type": kind, "previous_item_id": previous, "item": item.body()})

    async def _item_delete(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        self._conversation.delete(event.get("item_id"))
        await self.emit({"type": "conversation.item.deleted", "item_id": event["item_id"]})

    async def _item_retrieve(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        item = self._conversation.find(event.get("item_id"))
        await self.emit({"type": "conversation.item.retrieved", "item": item.body()})

    async def _item_truncate(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        """Cut an assistant's audio message to what was played; the item being spoken
        stops first."""
        item_id, end_ms = event.get("item_id"), event.get("audio_end_ms")
        if isinstance(end_ms, bool) or not isinstance(end_ms, int):
            raise RealtimeError(
                "invalid_value", "'audio_end_ms' must be an integer.", param="audio_end_ms"
            )
        self._conversation.find(item_id)
        running = self._running
        if running is not None and running.message is not None and running.message.id == item_id:
            running.cancel("client_cancelled")
            await running.finished.wait()
        self._conversation.replace(truncated(self._conversation.find(item_id), end_ms))
        await self.emit(
            {
                "type": "conversation.item.truncated",
                "item_id": item_id,
                "content_index": event.get("content_index", 0),
                "audio_end_ms": end_ms,
            }
        )

    # -- responses -------------------------------------------------------------------------

    async def _response_create(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        if self._config.kind != "realtime":
            raise RealtimeError("invalid_event", "A transcription session gives no responses.")
        await self._start(nursery, response_options(self._config, event.get("response")))

    async def _response_cancel(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        self._state = next_state(self._state, "cancel")
        if self._running is not None:
            self._running.cancel("client_cancelled")

    async def _output_clear(self, nursery: trio.Nursery, event: dict[str, Any]) -> None:
        if self._running is not None:
            self._running.cancel("client_cancelled")
        await self.emit({"type": "output_audio_buffer.cleared", "response_id": None})

    async def _start(self, nursery: trio.Nursery, options: ResponseOptions) -> None:
        self._state = next_state(self._state, "create")
        cascade = self._cascade
        if options.config.speaks != self._config.speaks:
            try:
                cascade = await self._replan(options.config)
            except ApiError as error:
                self._state = "idle"
                raise RealtimeError(error.code, error.message, param="response") from None
        running = Running(new_id("resp"), options)
        context = AnswerContext(
            self.emit,
            self._conversation,
            cascade,
            self._output,
            self._lead_s,
            self._transcribed,
            self._vad_stopped,
        )
        self._vad_stopped = None
        self._running = running
        nursery.start_soon(self._respond, context, running)

    async def _respond(self, context: AnswerContext, running: Running) -> None:
        try:
            await run_response(context, running)
        finally:
            running.finished.set()
            self._running = None
            self._state = next_state(self._state, "ended")
            if running.cancel_requested is not None:
                self.cancel_latencies.append(trio.current_time() - running.cancel_requested)


_TRANSCRIPT = "conversation.item.input_audio_transcription."
Handler = Callable[[RealtimeSession, trio.Nursery, dict[str, Any]], Awaitable[None]]
HANDLERS: Mapping[str, Handler] = {
    "session.update": RealtimeSession._session_update,
    "session.retemplate": RealtimeSession._legacy_update,
    "transcription_session.update": RealtimeSession._session_update,
    "input_audio_buffer.append": RealtimeSession._append,
    "input_audio_buffer.commit": RealtimeSession._commit,
    "input_audio_buffer.clear": RealtimeSession._clear,
    "conversation.item.create": RealtimeSession._item_create,
    "conversation.item.delete": RealtimeSession._item_delete,
    "conversation.item.retrieve": RealtimeSession._item_retrieve,
    "conversation.item.truncate": RealtimeSession._item_truncate,
    "response.create": RealtimeSession._response_create,
    "response.cancel": RealtimeSession._response_cancel,
    "output_audio_buffer.clear": RealtimeSession._output_clear,
}


def _replanned(before: SessionConfig, after: SessionConfig) -> bool:
    """Whether an update changes what the cascade planned (models, voice, speech)."""
    fields = ("transcription", "voice", "speed", "instructions", "max_output_tokens", "temperature")
    return before.speaks != after.speaks or any(
        getattr(before, f) != getattr(after, f) for f in fields
    )


def _recorded(pcm: bytes) -> Tape:
    """A committed turn whose recognition had not started (a client's commit of audio
    the VAD never heard as speech), on a tape the commit closes at once."""
    tape = Tape()
    tape.append(pcm)
    return tape
