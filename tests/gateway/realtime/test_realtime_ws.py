"""`GET /v1/realtime` over a real socket with a plain WebSocket client (the `websockets`
package, in a thread): the browser's key subprotocol, the beta dialect, G.711 audio,
push-to-talk, transcription sessions and the errors clients tolerate."""

from __future__ import annotations

import base64
import json
from functools import partial
from typing import Any

import av
import httpx
import pytest
import trio
from websockets.sync.client import ClientConnection, connect

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.pipelines.test_pipelines_api import sim_of
from tests.gateway.realtime.speech import FIRST, chunks, spoken_pcm, ws_base

BEARER = {"Authorization": f"Bearer {ADMIN_KEY}"}


class Client:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []

    def send(self, **event: Any) -> None:
        self.ws.send(json.dumps(event))

    def until(self, kind: str) -> dict[str, Any]:
        while True:
            event: dict[str, Any] = json.loads(self.ws.recv(timeout=60))
            assert isinstance(event.get("event_id"), str), event
            self.events.append(event)
            if event["type"] == kind:
                return event


async def in_thread(script: Any, *args: Any) -> Any:
    with trio.fail_after(120):
        return await trio.to_thread.run_sync(partial(script, *args), abandon_on_cancel=True)


def _ulaw(pcm24k: bytes) -> bytes:
    """PCM16 at 24 kHz as G.711 mu-law at 8 kHz (FFmpeg, as a telephony client would)."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=8000)
    frame = av.AudioFrame(format="s16", layout="mono", samples=len(pcm24k) // 2)
    frame.planes[0].update(pcm24k)
    frame.sample_rate = 24_000
    encoder = av.CodecContext.create("pcm_mulaw", "w")
    encoder.sample_rate, encoder.format, encoder.layout = 8000, "s16", "mono"
    encoder.open()
    out = b""
    for piece in [*resampler.resample(frame), *resampler.resample(None)]:
        out += b"".join(bytes(p) for p in encoder.encode(piece))
    return out


def browser_beta_g711(url: str, ulaw: bytes) -> list[dict[str, Any]]:
    """A browser's way in (the key in a subprotocol), the beta names, G.711 both ways."""
    protocols = ["realtime", f"openai-insecure-api-key.{ADMIN_KEY}", "openai-beta.realtime-v1"]
    with connect(url + "?model=gpt-realtime", subprotocols=protocols) as ws:  # type: ignore[arg-type]
        assert ws.subprotocol == "realtime"
        client = Client(ws)
        client.until("session.created")
        client.send(
            type="session.update",
            session={"input_audio_format": "g711_ulaw", "output_audio_format": "g711_ulaw"},
        )
        updated = client.until("session.updated")["session"]
        assert updated["input_audio_format"] == "g711_ulaw"
        for start in range(0, len(ulaw), 800):  # 100 ms of 8 kHz mu-law a message
            piece = base64.b64encode(ulaw[start : start + 800]).decode()
            client.send(type="input_audio_buffer.append", audio=piece)
        client.until("response.done")
        return client.events


async def test_a_browser_client_speaks_g711_in_the_beta_dialect(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim_of(gateway).transcripts.append(FIRST)
    sim_of(gateway).replies.append("It is sunny in Paris. Take sunglasses.")
    ulaw = _ulaw(await spoken_pcm(http, FIRST))
    events = await in_thread(browser_beta_g711, ws_base(gateway), ulaw)
    kinds = [e["type"] for e in events]
    assert "conversation.item.created" in kinds and "conversation.item.added" not in kinds
    assert "response.audio.delta" in kinds and "response.output_audio.delta" not in kinds
    assert "response.audio_transcript.delta" in kinds
    audio = b"".join(
        base64.b64decode(e["delta"]) for e in events if e["type"] == "response.audio.delta"
    )
    decoder = av.CodecContext.create("pcm_mulaw", "r")
    decoder.sample_rate, decoder.layout = 8000, "mono"
    samples = sum(f.samples for f in decoder.decode(av.Packet(audio)))
    assert samples == len(audio) and samples / 8000 > 1.0  # one byte a sample, 8 kHz
    done = events[-1]["response"]
    assert done["status"] == "completed" and done["output"][0]["content"][0]["type"] == "audio"


def push_to_talk(url: str, pcm: bytes) -> list[dict[str, Any]]:
    """No VAD: the client commits, then asks for a text answer, then misbehaves."""
    with connect(url, additional_headers=BEARER) as ws:
        client = Client(ws)
        client.until("session.created")
        client.send(
            type="session.update",
            session={"type": "realtime", "audio": {"input": {"turn_detection": None}}},
        )
        client.until("session.updated")
        client.send(type="response.cancel", event_id="evt_1")
        assert client.until("error")["error"] | {"event_id": "evt_1"} == client.events[-1]["error"]
        client.send(type="input_audio_buffer.commit", event_id="evt_2")
        assert client.until("error")["error"]["code"] == "input_audio_buffer_commit_empty"
        for piece in chunks(pcm):
            client.send(type="input_audio_buffer.append", audio=piece)
        client.send(type="input_audio_buffer.commit")
        client.until("input_audio_buffer.committed")
        metadata = {"client_event_id": "evt_3"}
        client.send(
            type="response.create", response={"output_modalities": ["text"], "metadata": metadata}
        )
        created = client.until("response.created")
        assert created["response"]["metadata"] == metadata
        client.send(type="response.create", event_id="evt_4")
        client.send(
            type="session.update", session={"audio": {"input": {"format": {"type": "audio/flac"}}}}
        )
        client.until("response.done")
        return client.events


async def test_push_to_talk_text_answer_and_the_errors_clients_tolerate(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim_of(gateway).transcripts.append(FIRST)
    sim_of(gateway).replies.append("It is sunny.")
    # The answer's model waits a second before it starts, so that the second
    # response.create and the bad session.update arrive while the first response is
    # surely active (on a busy machine a text answer could finish before they came).
    sim_of(gateway).faults.add(Fault(model="gpt-4o-mini", delay_ms=1000, remaining=1))
    events = await in_thread(push_to_talk, ws_base(gateway), await spoken_pcm(http, FIRST))
    errors = [e["error"] for e in events if e["type"] == "error"]
    assert [(e["code"], e["event_id"]) for e in errors] == [
        ("response_cancel_not_active", "evt_1"),
        ("input_audio_buffer_commit_empty", "evt_2"),
        ("conversation_already_has_active_response", "evt_4"),
        ("invalid_value", None),
    ]
    assert errors[3]["param"] == "session.audio.input.format"
    kinds = [e["type"] for e in events]
    assert "input_audio_buffer.speech_started" not in kinds  # no VAD
    assert "response.output_audio.delta" not in kinds
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "It is sunny."
    assert events[-1]["response"]["output"][0]["content"][0] == {
        "type": "output_text",
        "text": text,
    }


def transcription_only(url: str, pcm: bytes) -> list[dict[str, Any]]:
    query = "?intent=transcription&model=gpt-4o-mini-transcribe"
    with connect(url + query, additional_headers=BEARER) as ws:
        client = Client(ws)
        created = client.until("session.created")["session"]
        assert created["type"] == "transcription"
        assert created["audio"]["input"]["transcription"]["model"] == "gpt-4o-mini-transcribe"
        for piece in chunks(pcm):
            client.send(type="input_audio_buffer.append", audio=piece)
        client.until("conversation.item.input_audio_transcription.completed")
        client.send(type="response.create", event_id="evt_5")
        client.until("error")
        return client.events


async def test_a_transcription_session_transcribes_and_never_answers(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim_of(gateway).transcripts.append(FIRST)
    events = await in_thread(transcription_only, ws_base(gateway), await spoken_pcm(http, FIRST))
    kinds = [e["type"] for e in events]
    assert "response.created" not in kinds
    completed = next(e for e in events if e["type"].endswith("transcription.completed"))
    assert completed["transcript"] == FIRST
    assert events[-1]["error"]["event_id"] == "evt_5"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_session_that_cannot_start_says_why(gateway: RunningGateway) -> None:
    def refused(url: str, headers: dict[str, str]) -> tuple[dict[str, Any], int | None]:
        with connect(url, additional_headers=headers) as ws:
            event = json.loads(ws.recv(timeout=30))
            ws.recv_events_thread.join(10)  # the gateway closes the socket
            return event, ws.close_code

    for query, headers, code, status in (
        ("?model=gpt-realtime", {}, "invalid_api_key", 4401),
        ("?model=nope", BEARER, "model_not_found", 4404),
        ("?model=gpt-realtime&intent=translation", BEARER, "invalid_value", 4400),
    ):
        event, close = await in_thread(refused, ws_base(gateway) + query, headers)
        assert event["type"] == "error" and event["error"]["code"] == code
        assert close == status
