"""Recognition while the user speaks, on the session core under the autojump clock: the
turn's audio reaches the recogniser as it arrives (a partial a second of speech, sent
at once as `...input_audio_transcription.delta`), the final transcript is ready
`FINAL_S` after the VAD's stop, so the answer starts then; `input_audio_buffer.clear`
and a dropped socket cancel the recognition at once."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager

import attrs
import pytest
import trio

from gateway.kernels.voice.flow import Opened
from providers.audio_types import (
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionResult,
)
from streams.tape import Tape
from tests.gateway.realtime.test_session_core import (
    FakeSocket,
    ScriptedCascade,
    answer,
    session,
    until,
)

FINAL_S = 0.05  # the recogniser's final, after the turn's end
PIECE_S = 0.2  # what a client appends at once
WHOLE = 1 << 30  # a follower's piece: everything new at once


@attrs.define
class LiveCascade(ScriptedCascade):
    """A streaming recogniser: a partial (a word) per piece of audio heard, the final
    `FINAL_S` after the tape closes; notes when each recognition started and ended."""

    started: list[float] = attrs.field(factory=list)
    ended: list[tuple[float, str]] = attrs.field(factory=list)

    @asynccontextmanager
    async def transcribe_live(self, tape: Tape) -> AsyncIterator[Opened[TranscriptEvent]]:
        self.started.append(trio.current_time())
        try:
            async with aclosing(self._heard(tape)) as events:
                yield Opened(events, "live")
            self.ended.append((trio.current_time(), "done"))
        except trio.Cancelled:
            self.ended.append((trio.current_time(), "cancelled"))
            raise

    async def _heard(self, tape: Tape) -> AsyncGenerator[TranscriptEvent, None]:
        words: list[str] = []
        async for _piece in tape.follow(WHOLE):  # each append, as it arrives
            words.append(f"w{len(words) + 1}")
            yield TranscriptDelta(words[-1] + " ")
        await trio.sleep(FINAL_S)
        yield TranscriptDone(TranscriptionResult(" ".join(words), "en", len(tape) / 32_000))


async def speak(socket: FakeSocket, seconds: float, *, voiced: bool = True) -> None:
    """`seconds` of audio as a microphone sends it: a piece every `PIECE_S`."""
    for _ in range(round(seconds / PIECE_S)):
        await socket.speak(PIECE_S, voiced=voiced)
        await trio.sleep(PIECE_S)


PREFIX = "conversation.item.input_audio_transcription."


def times(socket: FakeSocket, kind: str) -> list[float]:
    return [at for at, _ in socket.of_type(kind)]


async def test_partials_come_while_the_user_speaks_and_the_final_soon_after_the_stop(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket, cascade = FakeSocket(), LiveCascade([answer()])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session(socket, cascade).run)
        await speak(socket, 3.0)
        await speak(socket, 1.0, voiced=False)  # the VAD hears the turn end at 3.4
        await until(socket, "response.created")
        socket.incoming.close()
    started_at = times(socket, "input_audio_buffer.speech_started")[0]
    stopped_at = times(socket, "input_audio_buffer.speech_stopped")[0]
    assert started_at == 0.0 and stopped_at == pytest.approx(3.4)
    assert cascade.started == [0.0]  # recognition began with the speech
    partials = socket.of_type(PREFIX + "delta")
    pieces = round(stopped_at / PIECE_S) + 1  # every piece of the turn, up to the stop
    assert [at for at, _ in partials] == pytest.approx([k * PIECE_S for k in range(pieces)])
    item_id = socket.of_type("input_audio_buffer.committed")[0][1]["item_id"]
    assert {e["item_id"] for _, e in partials} == {item_id}
    [(completed_at, completed)] = socket.of_type(PREFIX + "completed")
    assert completed_at == pytest.approx(stopped_at + FINAL_S)
    said = " ".join(f"w{k + 1}" for k in range(pieces))
    assert completed["transcript"] == said
    assert times(socket, "response.created")[0] == pytest.approx(stopped_at)
    assert cascade.bodies[0]["messages"][-1] == {"role": "user", "content": said}


async def test_a_clear_cancels_the_recognition_at_once(autojump_clock: trio.abc.Clock) -> None:
    socket, cascade = FakeSocket(), LiveCascade([answer()])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session(socket, cascade).run)
        await speak(socket, 1.0)
        await socket.event(type="input_audio_buffer.clear")
        await until(socket, "input_audio_buffer.cleared")
        await trio.sleep(5)
        socket.incoming.close()
    assert cascade.started == [0.0]
    assert [(round(at, 6), how) for at, how in cascade.ended] == [(1.0, "cancelled")]
    assert times(socket, PREFIX + "delta") == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])
    assert not socket.of_type(PREFIX + "completed") and not socket.of_type(PREFIX + "failed")


async def test_a_dropped_socket_cancels_the_recognition_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket, cascade = FakeSocket(), LiveCascade([answer()])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session(socket, cascade).run)
        await speak(socket, 2.0)
        socket.incoming.close()  # the client went away mid-turn
    assert [(round(at, 6), how) for at, how in cascade.ended] == [(2.0, "cancelled")]


async def test_push_to_talk_recognises_from_the_first_audio(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket, cascade = FakeSocket(), LiveCascade([answer()])
    talk = session(socket, cascade)
    talk._config = attrs.evolve(talk._config, turn_detection=None)
    talk._input.detector = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(talk.run)
        await speak(socket, 0.4, voiced=False)  # push-to-talk: no VAD, every sample counts
        await socket.event(type="input_audio_buffer.commit")
        await until(socket, PREFIX + "completed")
        socket.incoming.close()
    assert cascade.started == [0.0]
    assert times(socket, PREFIX + "delta") == pytest.approx([0.0, 0.2])
    assert times(socket, PREFIX + "completed") == pytest.approx([0.4 + FINAL_S])


async def test_a_commit_of_audio_the_vad_never_heard_is_still_recognised(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket, cascade = FakeSocket(), LiveCascade([answer()])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session(socket, cascade).run)
        await speak(socket, 0.2, voiced=False)  # no speech: the VAD starts no turn
        await socket.event(type="input_audio_buffer.commit")
        await until(socket, PREFIX + "completed")
        socket.incoming.close()
    assert cascade.started == [pytest.approx(0.2)]  # recognition of the committed audio
    assert times(socket, PREFIX + "completed") == pytest.approx([0.2 + FINAL_S])
