"""The live voice session, driven through a fake socket under the autojump clock: end of
turn from voice activity, barge-in that cancels the answer at once and closes every
upstream, a history that keeps only what was heard, and a dropped socket."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from gateway.pipelines.session import Configured, Session, SessionClosed
from gateway.pipelines.vad import FRAME_BYTES
from gateway.platform.errors import ApiError
from providers.audio_types import AudioClip
from tests.gateway.pipelines.scripted import ScriptedStages

SPEECH = b"\x10\x00" * (FRAME_BYTES // 2)  # a frame the fake classifier calls speech
SILENCE = bytes(FRAME_BYTES)
LLM = [(0.1, "One two three. "), (0.3, "Four five six. "), (1.0, "Seven eight nine.")]


def is_speech(frame: bytes) -> bool:
    return frame != bytes(len(frame))


class FakeSocket:
    def __init__(self) -> None:
        self.incoming_send, self._incoming = trio.open_memory_channel[str](64)
        self.sent: list[tuple[float, dict[str, Any]]] = []

    async def receive(self) -> str:
        try:
            return await self._incoming.receive()
        except trio.EndOfChannel:
            raise SessionClosed from None

    async def send(self, data: str) -> None:
        self.sent.append((trio.current_time(), json.loads(data)))

    async def append(self, *frames: bytes) -> None:
        audio = base64.b64encode(b"".join(frames)).decode()
        await self.incoming_send.send(
            json.dumps({"type": "input_audio_buffer.append", "audio": audio})
        )

    def of_type(self, kind: str) -> list[tuple[float, dict[str, Any]]]:
        return [(at, m) for at, m in self.sent if m["type"] == kind]


class Turns:
    """Scripted stages per turn, and the history each turn was given."""

    def __init__(self, *stages: ScriptedStages) -> None:
        self.stages = list(stages)
        self.histories: list[list[Mapping[str, str]]] = []
        self.clips: list[AudioClip] = []

    @asynccontextmanager
    async def __call__(
        self, clip: AudioClip, history: Sequence[Mapping[str, str]]
    ) -> AsyncIterator[ScriptedStages]:
        self.clips.append(clip)
        self.histories.append(list(history))
        yield self.stages[len(self.histories) - 1]


async def test_barge_in_cancels_the_answer_at_once_and_keeps_only_what_was_heard(
    autojump_clock: trio.abc.Clock,
) -> None:
    first = ScriptedStages(stt=[(0.1, "Count for me")], llm=LLM, tts_first_s=0.1)
    second = ScriptedStages(stt=[(0.1, "Stop")], llm=[(0.1, "Stopped. ")], tts_first_s=0.1)
    turns = Turns(first, second)
    socket = FakeSocket()
    session = Session(socket, turns, classifier=is_speech)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        await socket.append(*[SPEECH] * 5, *[SILENCE] * 30)  # a turn, then its end
        await trio.sleep(1.0)
        await socket.append(*[SPEECH] * 3)  # the user talks over the answer at t = 1.0
        await trio.sleep(0.5)
        await socket.append(*[SILENCE] * 30)
        await trio.sleep(2.0)
        await socket.incoming_send.aclose()

    dones = socket.of_type("response.done")
    assert [m["status"] for _, m in dones] == ["cancelled", "completed"]
    assert dones[0][0] == pytest.approx(1.0)  # cancelled the moment speech was heard
    assert session.cancel_latencies == [0.0]
    assert first.all_closed() and second.all_closed()
    assert first.counters["llm"].opened == 1 and first.counters["tts"].opened == 2

    # The second turn's model saw the first turn with only the sentences that were played.
    assert turns.histories[1] == [
        {"role": "user", "content": "Count for me"},
        {"role": "assistant", "content": "One two three. Four five six."},
    ]
    assert session.history[-1] == {"role": "assistant", "content": "Stopped."}
    assert turns.clips[0].duration_s == pytest.approx(35 * 0.02)

    kinds = [m["type"] for _, m in socket.sent]
    assert kinds[0] == "session.created"
    assert kinds[1:4] == [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
    ]
    audio = socket.of_type("response.audio.delta")
    assert audio[0][0] == pytest.approx(0.3)  # STT 0.1 + first sentence 0.1 + TTS 0.1


async def test_an_explicit_commit_and_cancel_without_vad(autojump_clock: trio.abc.Clock) -> None:
    stages = ScriptedStages(stt=[(0.1, "hello")], llm=LLM, tts_first_s=0.1)
    socket = FakeSocket()
    session = Session(socket, Turns(stages), classifier=None)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        await socket.append(SPEECH, SPEECH)
        await socket.incoming_send.send(json.dumps({"type": "input_audio_buffer.commit"}))
        await trio.sleep(0.25)
        await socket.incoming_send.send(json.dumps({"type": "response.cancel"}))
        await trio.sleep(0.1)
        await socket.incoming_send.aclose()

    ((at, done),) = socket.of_type("response.done")
    assert done["status"] == "cancelled" and at == pytest.approx(0.25)
    assert stages.all_closed()
    assert session.history == [{"role": "user", "content": "hello"}]  # nothing was heard yet


async def test_a_dropped_socket_ends_every_stage(autojump_clock: trio.abc.Clock) -> None:
    stages = ScriptedStages(stt=[(0.1, "hello")], llm=LLM, tts_first_s=0.1)
    socket = FakeSocket()
    session = Session(socket, Turns(stages), classifier=is_speech)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        await socket.append(*[SPEECH] * 5, *[SILENCE] * 30)
        await trio.sleep(0.5)
        await socket.incoming_send.aclose()  # the client is gone mid-answer

    assert trio.current_time() == pytest.approx(0.5)
    assert stages.counters["llm"].opened == 1
    assert stages.all_closed()


async def test_bad_events_get_error_events_and_the_session_goes_on(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket = FakeSocket()
    session = Session(socket, Turns(), classifier=is_speech)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        for raw in (
            "not json",
            "[]",
            '{"type": "dance"}',
            '{"type": "input_audio_buffer.append", "audio": "%"}',
        ):
            await socket.incoming_send.send(raw)
        await socket.incoming_send.send(
            json.dumps({"type": "session.update", "session": {"vad": False}})
        )
        await trio.sleep(0.1)
        await socket.incoming_send.aclose()
    codes = [m["error"]["code"] for _, m in socket.of_type("error")]
    assert codes == ["invalid_event", "invalid_event", "invalid_event", "invalid_audio"]
    assert socket.of_type("session.updated")[0][1]["session"] == {"vad": False}


async def test_session_update_changes_the_template_from_the_next_turn(
    autojump_clock: trio.abc.Clock,
) -> None:
    first = Turns()
    second = Turns(ScriptedStages(stt=[(0.1, "hello")], llm=LLM, tts_first_s=0.1))
    asked: list[tuple[str, str | None]] = []

    async def retemplate(template: str, context: str | None) -> Configured:
        asked.append((template, context))
        if template != "second":
            raise ApiError(404, "template_not_found", f"No template '{template}'.")
        return Configured("second-id", second, speak=False)

    socket = FakeSocket()
    session = Session(
        socket,
        first,
        classifier=is_speech,
        settings={"template": "first-id"},
        retemplate=retemplate,
        context="be brief",
    )
    updates = (
        {"template": "nope", "vad": False},  # refused: nothing changes, vad included
        {"template": 7},
        {"template": "second", "vad": False},
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        for update in updates:
            await socket.incoming_send.send(
                json.dumps({"type": "session.update", "session": update})
            )
        await socket.append(SPEECH, SPEECH)
        await socket.incoming_send.send(json.dumps({"type": "input_audio_buffer.commit"}))
        await trio.sleep(2)
        await socket.incoming_send.aclose()

    codes = [m["error"]["code"] for _, m in socket.of_type("error")]
    assert codes == ["template_not_found", "invalid_event"]
    assert asked == [("nope", "be brief"), ("second", "be brief")]
    ((_, updated),) = socket.of_type("session.updated")
    assert updated["session"] == {"template": "second-id", "vad": False}
    assert (len(first.histories), len(second.histories)) == (0, 1)
    ((_, done),) = socket.of_type("response.done")
    assert done["status"] == "completed"
    assert socket.of_type("response.audio.delta") == []  # the new template does not speak
