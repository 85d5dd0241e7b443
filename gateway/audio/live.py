"""Recognition while the user speaks: one candidate of a transcription plan fed a turn's
audio from a `streams.tape.Tape` as it is recorded (issue 35 point 1).

A voice session records the turn on a tape from its first sample (VAD's speech start,
or the first audio of a push-to-talk turn) and closes the tape when the turn is
committed. `live_opener` is the engine's opener (`Engine.open_stream`) for one
candidate: a vendor that recognises while audio comes (`Provider.transcribes_live`:
OpenAI's transcription sessions, Voxtral Realtime) is fed the tape as it grows; any
other candidate (a batch model, the `local` engine) waits for the close and transcribes
the recorded turn as one clip, streamed where it streams. Either way the opener is
entered at the first recognised text, so a candidate that fails before it falls back to
the next, which follows the tape from its start; after it, the turn fails.

Deadlines run from the turn's end, not from its start (a user may speak for minutes):
the upstream's handshake within `timeout_s`, then each event within `timeout_s` of the
later of the close and the previous event.
"""

from __future__ import annotations

import io
import math
import wave
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeVar

import trio

from gateway.audio.input import TranscriptionParams
from gateway.audio.transcription import transcription_request
from gateway.upstream.chain import deadline_exceeded
from gateway.upstream.resolve import Target
from providers.audio_types import AudioClip, LiveTranscriptionRequest, TranscriptEvent
from providers.base import Provider
from streams.tape import Tape

T = TypeVar("T")
TAPE_RATE = 16_000  # what a session's tape holds: PCM16 mono at this rate
# The engine's limit on entering a live opener: the turn's length at most, as the
# opener keeps its own deadlines from the turn's end.
OPEN_LIMIT_S = 5 * 60 + 60
Live = tuple[TranscriptEvent, AsyncIterator[TranscriptEvent]]


def tape_seconds(tape: Tape) -> float:
    return len(tape) / 2 / TAPE_RATE


def tape_clip(tape: Tape) -> AudioClip:
    """The recorded turn as the WAV file a batch recogniser takes."""
    sink = io.BytesIO()
    with wave.open(sink, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(TAPE_RATE)
        out.writeframes(tape.recorded())
    return AudioClip(sink.getvalue(), "wav", tape_seconds(tape), "turn.wav")


@asynccontextmanager
async def live_opener(
    adapter: Provider,
    target: Target,
    params: TranscriptionParams,
    tape: Tape,
    timeout_s: float,
) -> AsyncGenerator[Live, None]:
    """One candidate's recognition of the turn on `tape`, entered at its first event
    (see the module docstring); yields that event and the rest."""
    with trio.CancelScope(deadline=trio.current_time() + timeout_s) as handshake:
        async with _recognising(adapter, target, params, tape) as events:
            handshake.deadline = math.inf
            first = await next_within(events, tape, target, timeout_s)
            yield first, events
            return
    raise deadline_exceeded(target.provider_id, timeout_s)


@asynccontextmanager
async def _recognising(
    adapter: Provider, target: Target, params: TranscriptionParams, tape: Tape
) -> AsyncGenerator[AsyncIterator[TranscriptEvent], None]:
    if adapter.transcribes_live(target.upstream_model):
        request = LiveTranscriptionRequest(
            target.upstream_model, TAPE_RATE, params.language, params.prompt
        )
        async with adapter.transcribe_live(request, tape.follow()) as events:
            yield events
        return
    await tape.wait_closed()
    request_of_clip = transcription_request(params, tape_clip(tape), target)
    async with adapter.transcribe_stream(request_of_clip) as events:
        yield events


async def next_within(events: AsyncIterator[T], tape: Tape, target: Target, timeout_s: float) -> T:
    """The next event, which must come within `timeout_s` of the tape's close (no limit
    while the user still speaks); a silent upstream is the retryable 504. The end of
    `events` is `StopAsyncIteration`."""
    with trio.CancelScope() as scope:

        def arm() -> None:
            scope.deadline = trio.current_time() + timeout_s

        forget = tape.when_closed(arm)
        try:
            return await anext(events)
        finally:
            forget()
    raise deadline_exceeded(target.provider_id, timeout_s)
