"""The Realtime session core on scripted stages, under the autojump clock: the answer's
audio runs at most the lead ahead of playback (exact virtual times), a barge-in cancels
every stage at once and the history keeps what was played, and a dropped socket ends
everything."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import attrs
import pytest
import trio

from gateway.kernels.voice.flow import Opened
from gateway.kernels.voice.session import LanguageModel, Responding, ToolCalls
from gateway.pipelines.metered import Metered
from gateway.realtime.config import SessionConfig, TurnDetection
from gateway.realtime.events import Dialect
from gateway.realtime.session import RealtimeSession, SessionClosed
from gateway.upstream.limits import Hold, Unlimited
from providers.audio_types import AudioClip, TranscriptEvent
from streams.tape import Tape
from tests.gateway.pipelines.scripted import ScriptedStages, Timed

SECOND_OF_AUDIO = 24_000 * 2
SENTENCES = ["Alpha beta gamma delta. ", "Echo foxtrot golf hotel. ", "India juliet kilo lima."]
LEAD_S = 1.5


@attrs.define
class PcmStages(ScriptedStages):
    """Scripted stages whose speech is real-sized PCM: each piece one second."""

    metered: Metered = attrs.field(factory=Metered)

    async def _audio(self, index: int) -> AsyncGenerator[bytes, None]:
        await trio.sleep(self.first_bytes_s(index))
        for piece in range(self.tts_pieces):
            if piece:
                await trio.sleep(self.piece_s)
            yield b"\x01\x00" * (SECOND_OF_AUDIO // 2)


@attrs.define
class ScriptedCascade:
    answers: list[PcmStages]
    transcripts: list[Timed] = attrs.field(factory=list)
    bodies: list[dict[str, Any]] = attrs.field(factory=list)
    llm: LanguageModel = attrs.field(factory=lambda: LanguageModel("gpt-4o-mini", "Be brief."))

    def transcribe(self, clip: AudioClip) -> AbstractAsyncContextManager[Opened[TranscriptEvent]]:
        return ScriptedStages(stt=self.transcripts.pop(0), llm=[]).transcribe()

    @asynccontextmanager
    async def transcribe_live(self, tape: Tape) -> AsyncIterator[Opened[TranscriptEvent]]:
        """A recogniser of whole turns: the script, from the turn's end."""
        await tape.wait_closed()
        async with self.transcribe(AudioClip(b"", "wav", 0.0, "turn.wav")) as opened:
            yield opened

    def response(self, body: dict[str, Any], calls: ToolCalls) -> Responding:
        self.bodies.append(body)
        return self.answers[len(self.bodies) - 1]

    @asynccontextmanager
    async def admitted(
        self, response: Responding, prompt_tokens: int, max_tokens: int
    ) -> AsyncIterator[Hold]:
        yield Unlimited()


class FakeSocket:
    def __init__(self) -> None:
        self.incoming, self._incoming = trio.open_memory_channel[str](64)
        self.sent: list[tuple[float, dict[str, Any]]] = []
        self.arrived = trio.Event()  # set at each event the session sends

    async def receive(self) -> str:
        try:
            return await self._incoming.receive()
        except trio.EndOfChannel:
            raise SessionClosed from None

    async def send(self, data: str) -> None:
        self.sent.append((trio.current_time(), json.loads(data)))
        self.arrived.set()
        self.arrived = trio.Event()

    async def event(self, **event: Any) -> None:
        await self.incoming.send(json.dumps(event))

    async def speak(self, seconds: float, *, voiced: bool = True) -> None:
        pcm = (b"\x10\x10" if voiced else b"\x00\x00") * int(24_000 * seconds)
        await self.event(type="input_audio_buffer.append", audio=base64.b64encode(pcm).decode())

    def of_type(self, kind: str) -> list[tuple[float, dict[str, Any]]]:
        return [(at, m) for at, m in self.sent if m["type"] == kind]


def is_speech(frame: bytes) -> bool:
    return frame.count(0) < len(frame) // 2


async def _replan(config: SessionConfig) -> Any:
    raise AssertionError("not replanned in these tests")


def session(socket: FakeSocket, cascade: ScriptedCascade) -> RealtimeSession:
    return RealtimeSession(
        socket,
        Dialect(),
        SessionConfig(kind="realtime", model="gpt-realtime", turn_detection=TurnDetection()),
        cascade,
        _replan,
        classifier_for=lambda vad: is_speech,
        lead_s=LEAD_S,
    )


def answer(tts_pieces: int = 2) -> PcmStages:
    tokens = [(0.01, s) for s in SENTENCES]
    return PcmStages(stt=[], llm=tokens, tts_first_s=0.1, tts_pieces=tts_pieces, piece_s=0.01)


async def _ask(socket: FakeSocket, text: str) -> None:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    await socket.event(type="conversation.item.create", item=item)
    await socket.event(type="response.create")


async def until(socket: FakeSocket, kind: str, count: int = 1) -> float:
    """Wait (virtual time, at most a minute) for the `count`th event of `kind`; its time."""
    with trio.move_on_after(60):
        while len(socket.of_type(kind)) < count:
            await socket.arrived.wait()
    if len(socket.of_type(kind)) < count:
        raise AssertionError([m["type"] for _, m in socket.sent if "delta" not in m["type"]])
    return socket.of_type(kind)[count - 1][0]


async def test_audio_runs_at_most_the_lead_ahead_of_playback(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket, stages = FakeSocket(), answer()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session(socket, ScriptedCascade([stages])).run)
        await _ask(socket, "Count for me")
        await until(socket, "response.done")
        socket.incoming.close()
    deltas = [at for at, _ in socket.of_type("response.output_audio.delta")]
    assert len(deltas) == 6  # three sentences, two seconds each
    first = deltas[0]
    for index, at in enumerate(deltas):  # piece k waits until k + 1 seconds - lead played
        assert at - first == pytest.approx(max(0.0, index + 1 - LEAD_S), abs=1e-6)
    assert stages.all_closed()


async def test_barge_in_cancels_every_stage_and_keeps_what_was_played(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket = FakeSocket()
    first, second = answer(), answer()
    cascade = ScriptedCascade([first, second], transcripts=[[(0.05, "Stop there")]])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session(socket, cascade).run)
        await _ask(socket, "Count for me")
        started = await until(socket, "response.output_audio.delta")
        await trio.sleep(started + 3.0 - trio.current_time())  # three seconds played
        await socket.speak(0.2)  # the user speaks over the answer
        await socket.speak(1.0, voiced=False)
        await until(socket, "response.done", 2)
        spoken_id = socket.of_type("response.done")[0][1]["response"]["output"][0]["id"]
        await socket.event(type="conversation.item.retrieve", item_id=spoken_id)
        await until(socket, "conversation.item.retrieved")
        socket.incoming.close()
    heard_at = socket.of_type("input_audio_buffer.speech_started")[0][0]
    done_at, done = socket.of_type("response.done")[0]
    assert done["response"]["status"] == "cancelled"
    assert done_at == heard_at  # cancelled within the same instant: nothing waited
    assert first.all_closed() and first.counters["llm"].opened == 1
    kept = socket.of_type("conversation.item.retrieved")[0][1]["item"]["content"][0]
    assert kept["transcript"] == "Alpha beta gamma delta. Echo foxtrot"
    history = cascade.bodies[1]["messages"]
    assert history[-3:] == [
        {"role": "user", "content": "Count for me"},
        {"role": "assistant", "content": "Alpha beta gamma delta. Echo foxtrot"},
        {"role": "user", "content": "Stop there"},
    ]


async def test_a_truncate_cuts_what_the_model_sees_next(autojump_clock: trio.abc.Clock) -> None:
    socket = FakeSocket()
    first, second = answer(tts_pieces=1), answer(tts_pieces=1)
    cascade = ScriptedCascade([first, second])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session(socket, cascade).run)
        await _ask(socket, "Count for me")
        await until(socket, "response.done")
        item_id = socket.of_type("response.done")[0][1]["response"]["output"][0]["id"]
        await socket.event(
            type="conversation.item.truncate", item_id=item_id, content_index=0, audio_end_ms=1500
        )
        await _ask(socket, "Go on")
        await until(socket, "response.done", 2)
        socket.incoming.close()
    assert socket.of_type("conversation.item.truncated")[0][1]["audio_end_ms"] == 1500
    assert cascade.bodies[1]["messages"][-2] == {
        "role": "assistant",
        "content": "Alpha beta gamma delta. Echo foxtrot",
    }


async def test_a_dropped_socket_ends_the_answer_and_closes_every_stage(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket, stages = FakeSocket(), answer()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session(socket, ScriptedCascade([stages])).run)
            await _ask(socket, "Count for me")
            await until(socket, "response.output_audio.delta")
            socket.incoming.close()  # the client left mid-answer
    assert stages.all_closed()
    assert not socket.of_type("response.done")


async def test_items_are_created_placed_retrieved_and_deleted(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket = FakeSocket()

    def text(item_id: str, words: str) -> dict[str, Any]:
        part = {"type": "input_text", "text": words}
        return {"id": item_id, "type": "message", "role": "user", "content": [part]}

    async with trio.open_nursery() as nursery:
        nursery.start_soon(session(socket, ScriptedCascade([])).run)
        await socket.event(type="conversation.item.create", item=text("item_b", "second"))
        await socket.event(
            type="conversation.item.create", item=text("item_a", "first"), previous_item_id="root"
        )
        await socket.event(type="conversation.item.delete", item_id="item_b")
        await socket.event(type="conversation.item.retrieve", item_id="item_b", event_id="evt_9")
        await socket.event(type="conversation.item.retrieve", item_id="item_a")
        await until(socket, "conversation.item.retrieved")
        socket.incoming.close()
    added = [m for _, m in socket.of_type("conversation.item.added")]
    assert [(m["item"]["id"], m["previous_item_id"]) for m in added] == [
        ("item_b", None),
        ("item_a", None),  # placed first, before item_b
    ]
    assert socket.of_type("conversation.item.deleted")[0][1]["item_id"] == "item_b"
    ((_, error),) = socket.of_type("error")
    assert (error["error"]["code"], error["error"]["event_id"]) == ("item_not_found", "evt_9")
    retrieved = socket.of_type("conversation.item.retrieved")[0][1]["item"]
    assert retrieved["content"] == [{"type": "input_text", "text": "first"}]
