"""`/v1/audio/speech` with `stream=true` over ElevenLabs' WebSocket input streaming, chosen
by the provider setting `speech_transport: "websocket"`, end to end: the official client,
the gateway, the adapter's socket, the simulator's stream-input endpoint."""

from __future__ import annotations

import io

import attrs
import httpx
import openai
import pytest
import soundfile
import trio

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from providers.sim.core import Fault
from providers.sim.server import SimServer

TEXT = "Your table for two is booked for seven o'clock tonight."
SOCKET_PATH = "/elevenlabs/v1/text-to-speech/{voice_id}/stream-input"
MODEL = "eleven_flash_v2_5"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The suite's settings with a short upstream deadline, for the silent socket."""
    return attrs.evolve(settings, upstream_timeout_s=2.0)


def sim_of(gateway: RunningGateway) -> SimServer:
    assert gateway.sim is not None
    return gateway.sim


async def use_the_socket(http: httpx.AsyncClient) -> None:
    response = await http.patch(
        "/v1/management/providers/elevenlabs", json={"settings": {"speech_transport": "websocket"}}
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("fmt", ["mp3", "opus", "wav"])
async def test_streamed_speech_comes_over_the_socket(
    gateway: RunningGateway, http: httpx.AsyncClient, client: openai.AsyncOpenAI, fmt: str
) -> None:
    await use_the_socket(http)
    async with client.audio.speech.with_streaming_response.create(
        model=MODEL,
        voice="calm",
        input=TEXT,
        response_format=fmt,  # type: ignore[arg-type]
        extra_body={"stream": True},
    ) as response:
        assert response.headers["x-service-provider"] == "elevenlabs"
        data = b"".join([chunk async for chunk in response.iter_bytes()])
    assert sim_of(gateway).stats.by_path.get(SOCKET_PATH) == 1
    expected = {"mp3": "MP3", "opus": "OGG", "wav": "WAV"}[fmt]
    info = soundfile.info(io.BytesIO(data))
    assert info.format == expected and info.duration > 1.0


async def test_without_the_setting_speech_stays_on_http(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    async with client.audio.speech.with_streaming_response.create(
        model=MODEL, voice="calm", input=TEXT, response_format="mp3", extra_body={"stream": True}
    ) as response:
        assert [chunk async for chunk in response.iter_bytes()]
    assert SOCKET_PATH not in sim_of(gateway).stats.by_path


async def test_a_client_hanging_up_closes_the_upstream_socket(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await use_the_socket(http)
    sim = sim_of(gateway)
    sim.faults.add(Fault(model=MODEL, stop_after_chunks=1, stall_ms=60_000, remaining=1))
    body = {
        "model": MODEL,
        "voice": "calm",
        "input": TEXT,
        "stream": True,
        "response_format": "pcm",
    }
    with trio.fail_after(10):
        async with http.stream("POST", "/v1/audio/speech", json=body) as response:
            assert response.status_code == 200
            assert response.headers["x-service-provider"] == "elevenlabs"
            assert await anext(response.aiter_raw())
        while sim.stats.client_disconnects == 0:  # noqa: ASYNC110 (a counter, no event)
            await trio.sleep(0.01)
    assert sim.stats.by_path.get(SOCKET_PATH) == 1
    assert sim.stats.client_disconnects == 1


async def test_a_refused_socket_falls_back_and_says_so(
    gateway: RunningGateway, http: httpx.AsyncClient, client: openai.AsyncOpenAI
) -> None:
    await use_the_socket(http)
    sim_of(gateway).faults.add(Fault(model=MODEL, status=503, remaining=1))
    async with client.audio.speech.with_streaming_response.create(
        model=MODEL, voice="calm", input=TEXT, response_format="wav", extra_body={"stream": True}
    ) as response:
        assert response.headers["x-service-fallback"] == "true"
        # eleven_flash_v2_5's catalog chain goes on with eleven_turbo_v2_5
        assert response.headers["x-service-model"] == "eleven_turbo_v2_5"
        assert soundfile.info(io.BytesIO(await response.read())).format == "WAV"


async def test_a_refused_socket_with_nothing_behind_is_the_spec_error(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await use_the_socket(http)
    disabled = await http.post("/v1/management/providers/local/disable")
    assert disabled.status_code == 200, disabled.text
    sim_of(gateway).faults.add(Fault(model="*", status=401))
    body = {
        "model": MODEL,
        "voice": "calm",
        "input": TEXT,
        "stream": True,
        "service": {"fallbacks": []},
    }
    response = await http.post("/v1/audio/speech", json=body)
    assert response.status_code == 500, response.text
    error = response.json()["error"]
    assert error["code"] == "provider_error" and error["provider"] == "elevenlabs"


async def test_a_silent_socket_meets_the_gateway_deadline(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """The handshake answers, then nothing: the first-byte deadline ends the wait."""
    await use_the_socket(http)
    await http.post("/v1/management/providers/local/disable")
    # Every candidate of the chain (two ElevenLabs models, then tts-1) stays silent.
    sim_of(gateway).faults.add(Fault(model="*", stop_after_chunks=0, stall_ms=60_000))
    body = {"model": MODEL, "voice": "calm", "input": TEXT, "stream": True}
    with trio.fail_after(20):
        response = await http.post("/v1/audio/speech", json=body, timeout=20)
    assert response.status_code == 504, response.text
    assert response.json()["error"]["code"] == "provider_timeout"


async def test_an_unknown_transport_is_refused(http: httpx.AsyncClient) -> None:
    response = await http.patch(
        "/v1/management/providers/elevenlabs", json={"settings": {"speech_transport": "pigeon"}}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["param"] == "settings.speech_transport"
