"""The voice session over a real WebSocket: spoken PCM in (WebRTC VAD ends the turn), a
transcript, the answer's text and decodable PCM audio out, on the local engines."""

from __future__ import annotations

import base64
import json
from typing import Any

import attrs
import httpx
import pytest
import trio
from trio_websocket import ConnectionClosed, open_websocket_url

from gateway.app.server import RunningGateway
from providers.audio_codec import decode
from providers.sim.core import Fault
from providers.sim.server import SimServer
from tests.gateway.audio.test_local_audio_api import overlap
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.pipelines.test_pipelines_api import (
    ANSWER,
    SPOKEN,
    local_template,
    sim_of,
    spoken_wav,
)

AUTH = [(b"authorization", f"Bearer {ADMIN_KEY}".encode())]


def ws_url(gateway: RunningGateway, query: str) -> str:
    return gateway.url.replace("http://", "ws://") + "/v1/audio/sessions" + query


async def test_a_spoken_turn_is_answered_with_text_and_audio(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    template = await local_template(http)
    sim_of(gateway).replies.append(ANSWER)
    pcm = decode(await spoken_wav(http, SPOKEN), rate=16_000).samples + bytes(16_000 * 2)
    received: list[dict[str, Any]] = []
    with trio.fail_after(120):
        async with open_websocket_url(
            ws_url(gateway, "?template=local-agent"), extra_headers=AUTH
        ) as ws:
            for start in range(0, len(pcm), 6400):  # 200 ms a message, as a microphone would
                chunk = base64.b64encode(pcm[start : start + 6400]).decode()
                await ws.send_message(
                    json.dumps({"type": "input_audio_buffer.append", "audio": chunk})
                )
            while not received or received[-1]["type"] != "response.done":
                received.append(json.loads(await ws.get_message()))
    kinds = [m["type"] for m in received]
    assert kinds[0] == "session.created"
    assert received[0]["session"] == {"template": template["id"], "vad": True}
    assert "input_audio_buffer.speech_started" in kinds
    assert kinds.index("input_audio_buffer.speech_stopped") < kinds.index("response.created")
    final = next(m for m in received if m["type"] == "transcription.final")
    assert overlap(SPOKEN, final["text"]) >= 0.6
    text = "".join(m["delta"] for m in received if m["type"] == "response.text.delta")
    assert text == ANSWER
    audio = b"".join(
        base64.b64decode(m["delta"]) for m in received if m["type"] == "response.audio.delta"
    )
    assert len(audio) % 2 == 0 and len(audio) / 2 / 24_000 > 1.0
    assert received[-1]["status"] == "completed"


# trio-websocket's client leaves its own TCP socket to the garbage collector when the
# server closes first (the socket is the test client's: laddr is its ephemeral port).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_session_that_cannot_start_says_why_and_closes(gateway: RunningGateway) -> None:
    cases: tuple[tuple[str, list[tuple[bytes, bytes]], int, str], ...] = (
        ("", [], 4401, "invalid_api_key"),
        ("?template=nope", AUTH, 4404, "template_not_found"),
    )
    for query, headers, code, error in cases:
        async with open_websocket_url(ws_url(gateway, query), extra_headers=headers) as ws:
            message = json.loads(await ws.get_message())
            assert message["type"] == "error" and message["error"]["code"] == error
            with pytest.raises(ConnectionClosed):  # the gateway closes the session
                await ws.get_message()
            assert ws.closed is not None and ws.closed.code == code


async def test_session_update_changes_the_template(gateway: RunningGateway) -> None:
    async with open_websocket_url(ws_url(gateway, ""), extra_headers=AUTH) as ws:
        created = json.loads(await ws.get_message())
        assert created["session"]["template"] == "voice-agent-fast"
        for template in ("nope", "voice-agent-premium"):
            update = {"type": "session.update", "session": {"template": template}}
            await ws.send_message(json.dumps(update))
        refused = json.loads(await ws.get_message())
        assert refused["type"] == "error" and refused["error"]["code"] == "template_not_found"
        updated = json.loads(await ws.get_message())
        assert updated == {
            "type": "session.updated",
            "session": {"template": "voice-agent-premium", "vad": True},
        }


async def test_barge_in_closes_every_upstream_request(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """User speech while the answer plays: the answer is cancelled and the simulators,
    which count the requests they are answering, see the model's stream and the
    synthesis being given both closed."""
    sim = sim_of(gateway)
    sim.transcripts.append(SPOKEN)
    sim.replies.append(ANSWER)
    sim.config = attrs.evolve(sim.config, tokens_per_second=5)  # the model still writes
    sim.faults.add(Fault(model="tts-1-hd", stop_after_chunks=1, stall_ms=60_000))
    speech = decode(await spoken_wav(http, SPOKEN), rate=16_000).samples
    received: list[dict[str, Any]] = []

    async def until(kind: str) -> dict[str, Any]:
        while True:
            message: dict[str, Any] = json.loads(await ws.get_message())
            received.append(message)
            if message["type"] == kind:
                return message

    with trio.fail_after(60):
        url = ws_url(gateway, "?template=voice-agent-premium")
        async with open_websocket_url(url, extra_headers=AUTH) as ws:
            await append(ws, speech + bytes(16_000 * 2))  # a turn, then a second of silence
            await until("response.audio.delta")
            assert sim.stats.open_requests >= 2  # the model's stream, the stalled speech
            await append(ws, speech)  # the user speaks over the answer
            done = await until("response.done")
            assert done["status"] == "cancelled"
            await only_the_new_turn_listened_to(sim)
    kinds = [m["type"] for m in received]
    assert kinds.count("input_audio_buffer.speech_started") == 2
    assert kinds.index("response.audio.delta") < kinds.index("response.done")


async def only_the_new_turn_listened_to(sim: SimServer) -> None:
    """The simulator sees every request of the cancelled answer closed (at once here; a
    loaded machine gets 5 s): what stays open is the recognition of the user's new turn,
    which listens while they speak (OpenAI's transcription session, the second one)."""
    for _ in range(100):
        if sim.stats.open_requests <= 1:
            break
        await trio.sleep(0.05)
    assert sim.stats.open_requests == 1
    assert sim.stats.by_path["/openai/v1/realtime"] == 2


async def append(ws: Any, pcm: bytes) -> None:
    for start in range(0, len(pcm), 6400):  # 200 ms a message, as a microphone would
        chunk = base64.b64encode(pcm[start : start + 6400]).decode()
        await ws.send_message(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))


async def test_the_client_says_its_sample_rate(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """Audio at 24 kHz, as realtime clients send it, is read as 24 kHz when the session
    is told so (it was read as 16 kHz: slowed down, and misheard)."""
    await local_template(http)
    sim_of(gateway).replies.append(ANSWER)
    pcm = decode(await spoken_wav(http, SPOKEN), rate=24_000).samples + bytes(24_000 * 2)
    received: list[dict[str, Any]] = []
    with trio.fail_after(120):
        url = ws_url(gateway, "?template=local-agent&sample_rate=24000")
        async with open_websocket_url(url, extra_headers=AUTH) as ws:
            for start in range(0, len(pcm), 9600):
                chunk = base64.b64encode(pcm[start : start + 9600]).decode()
                await ws.send_message(
                    json.dumps({"type": "input_audio_buffer.append", "audio": chunk})
                )
            while not received or received[-1]["type"] != "response.done":
                received.append(json.loads(await ws.get_message()))
    final = next(m for m in received if m["type"] == "transcription.final")
    assert overlap(SPOKEN, final["text"]) >= 0.6
    assert received[-1]["status"] == "completed"
