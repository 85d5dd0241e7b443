"""`/v1/audio/sessions`' protocol on the session core (`gateway.realtime.legacy`), through a
fake socket under the autojump clock: end of turn from voice activity, barge-in that
cancels the answer at once, an explicit commit and cancel, bad events, and a template
changed by `session.update` from the next turn."""

from __future__ import annotations

import base64
import json
from typing import Any

import trio

from gateway.kernels.voice.session import Cascade
from gateway.pipelines.sessions import legacy_config
from gateway.pipelines.templates import builtin_templates
from gateway.platform.errors import ApiError
from gateway.realtime.config import AudioFormat, SessionConfig
from gateway.realtime.legacy import LegacyWire
from gateway.realtime.session import RealtimeSession
from tests.gateway.realtime.test_session_core import (
    FakeSocket,
    ScriptedCascade,
    answer,
    is_speech,
    until,
)

TEMPLATE = builtin_templates()["voice-agent-fast"]
RATE_16K = AudioFormat("audio/pcm", 16_000)


def legacy(
    socket: FakeSocket, cascade: ScriptedCascade, *, vad: bool = True, retemplate: Any = None
) -> RealtimeSession:
    async def replan(config: SessionConfig) -> Cascade:
        raise AssertionError("not replanned here")

    return RealtimeSession(
        socket,
        LegacyWire(),
        legacy_config(TEMPLATE, RATE_16K, vad),
        cascade,
        replan,
        classifier_for=lambda _vad: is_speech,
        lead_s=1.5,
        respond_on_commit=True,
        retemplate=retemplate,
    )


async def speak(socket: FakeSocket, seconds: float, *, voiced: bool = True) -> None:
    pcm = (b"\x10\x10" if voiced else b"\x00\x00") * int(16_000 * seconds)
    await socket.event(type="input_audio_buffer.append", audio=base64.b64encode(pcm).decode())


async def test_a_turn_and_a_barge_in_in_the_legacy_protocol(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket = FakeSocket()
    first, second = answer(), answer()
    cascade = ScriptedCascade([first, second], transcripts=[[(0.1, "Count")], [(0.1, "Stop")]])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(legacy(socket, cascade).run)
        await speak(socket, 0.5)
        await speak(socket, 1.0, voiced=False)
        started = await until(socket, "response.audio.delta")
        await trio.sleep(started + 2.0 - trio.current_time())
        await speak(socket, 0.3)  # over the answer
        await speak(socket, 1.0, voiced=False)
        await until(socket, "response.done", 2)
        socket.incoming.close()
    kinds = [m["type"] for _, m in socket.sent]
    assert kinds[:4] == [
        "session.created",
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
    ]
    assert socket.sent[0][1] == {
        "type": "session.created",
        "session": {"template": "voice-agent-fast", "vad": True},
    }
    assert {"type": "transcription.final", "text": "Count"} in [m for _, m in socket.sent]
    done = [m for _, m in socket.of_type("response.done")]
    assert [d["status"] for d in done] == ["cancelled", "completed"]
    assert set(done[0]) >= {"type", "response_id", "status"} and "event_id" not in done[0]
    assert first.all_closed()
    assert cascade.bodies[1]["messages"][-2:] == [
        {"role": "assistant", "content": "Alpha beta gamma delta."},
        {"role": "user", "content": "Stop"},
    ]


async def test_an_explicit_commit_and_cancel_without_vad(autojump_clock: trio.abc.Clock) -> None:
    socket, stages = FakeSocket(), answer()
    cascade = ScriptedCascade([stages], transcripts=[[(0.1, "hello")]])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(legacy(socket, cascade, vad=False).run)
        await speak(socket, 0.5)
        await socket.event(type="input_audio_buffer.commit")
        await until(socket, "response.audio.delta")
        await socket.event(type="response.cancel")
        await until(socket, "response.done")
        await socket.event(type="response.cancel")  # nothing to cancel: the old silence
        await trio.sleep(0.1)
        socket.incoming.close()
    ((_, done),) = socket.of_type("response.done")
    assert done["status"] == "cancelled"
    assert stages.all_closed()
    assert socket.of_type("error") == []


async def test_bad_events_get_error_events_and_the_session_goes_on(
    autojump_clock: trio.abc.Clock,
) -> None:
    socket = FakeSocket()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(legacy(socket, ScriptedCascade([])).run)
        for raw in (
            "not json",
            "[]",
            '{"type": "dance"}',
            '{"type": "response.create"}',  # the Realtime protocol's, not this one's
            '{"type": "input_audio_buffer.append", "audio": "%"}',
        ):
            await socket.incoming.send(raw)
        await socket.event(type="session.update", session={"vad": False})
        await until(socket, "session.updated")
        socket.incoming.close()
    codes = [m["error"]["code"] for _, m in socket.of_type("error")]
    assert codes == ["invalid_event"] * 4 + ["invalid_audio"]
    assert socket.of_type("session.updated")[0][1]["session"] == {
        "template": "voice-agent-fast",
        "vad": False,
    }


async def test_session_update_changes_the_template_from_the_next_turn(
    autojump_clock: trio.abc.Clock,
) -> None:
    first = ScriptedCascade([])
    second = ScriptedCascade([answer()], transcripts=[[(0.1, "hello")]])
    asked: list[tuple[str | None, str | None]] = []

    async def retemplate(
        template: str | None, context: str | None, config: SessionConfig
    ) -> tuple[Cascade, SessionConfig]:
        asked.append((template, context))
        if template != "second":
            raise ApiError(404, "template_not_found", f"No template '{template}'.")
        text_only = builtin_templates()["ambient-scribe"]
        return second, legacy_config(text_only, config.input_format, vad=False)

    socket = FakeSocket()
    updates = (
        {"template": "nope", "vad": False},  # refused: nothing changes, vad included
        {"template": 7},
        {"template": "second", "context": "be brief"},
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(legacy(socket, first, retemplate=retemplate).run)
        for update in updates:
            await socket.event(type="session.update", session=update)
        await speak(socket, 0.5)
        await socket.event(type="input_audio_buffer.commit")
        await until(socket, "response.done")
        socket.incoming.close()
    codes = [m["error"]["code"] for _, m in socket.of_type("error")]
    assert codes == ["template_not_found", "invalid_event"]
    assert asked == [("nope", "\x00keep"), ("second", "be brief")]
    ((_, updated),) = socket.of_type("session.updated")
    assert updated["session"] == {"template": "ambient-scribe", "vad": False}
    assert first.bodies == [] and len(second.bodies) == 1
    ((_, done),) = socket.of_type("response.done")
    assert done["status"] == "completed"
    assert socket.of_type("response.audio.delta") == []  # the new template does not speak
    assert socket.of_type("response.text.delta")


def test_the_legacy_protocol_renders_no_event_the_old_clients_never_had() -> None:
    wire = LegacyWire()
    for kind in ("conversation.item.added", "rate_limits.updated", "response.content_part.added"):
        assert wire.render({"type": kind}) is None
    rendered = wire.render(
        {"type": "response.output_audio.delta", "response_id": "r", "delta": "AA"}
    )
    assert json.loads(rendered or b"") == {
        "type": "response.audio.delta",
        "response_id": "r",
        "delta": "AA",
    }
